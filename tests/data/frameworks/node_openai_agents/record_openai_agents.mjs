// Runs one scenario's turns through the OpenAI Agents SDK for JavaScript, traced by OpenInference; writes
// {"otlp": ..., "turns": [...]} to input.output.
import * as agents from "@openai/agents";
import { OpenAIAgentsInstrumentation } from "@arizeai/openinference-instrumentation-openai-agents";
import { JsonTraceSerializer } from "@opentelemetry/otlp-transformer";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { readFileSync, writeFileSync } from "node:fs";
import { z } from "zod";

const input = JSON.parse(readFileSync(0, "utf-8"));
const exporter = new InMemorySpanExporter();
// The instrumentation writes no group id on any span: this processor puts the SDK trace's groupId on every span as
// session.id, so the turns of one conversation join one session (docs/frameworks.md).
const sessionFromGroupId = {
  onStart(span) {
    const groupId = agents.getCurrentTrace()?.groupId;
    if (groupId) span.setAttribute("session.id", groupId);
  },
  onEnd() {},
  forceFlush: async () => {},
  shutdown: async () => {},
};
const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ "service.name": "openai_agents_js" }),
  spanProcessors: [sessionFromGroupId, new SimpleSpanProcessor(exporter)],
});
provider.register();
new OpenAIAgentsInstrumentation({ tracerProvider: provider }).manuallyInstrument(agents);

const WEATHER = {
  Paris: { temperature_c: 18, conditions: "cloudy" },
  Tokyo: { temperature_c: 24, conditions: "sunny" },
  Rome: { temperature_c: 27, conditions: "clear" },
};
const city = z.object({ city: z.string() });
const tools = [
  agents.tool({
    name: "get_weather",
    description: "The current weather in a city.",
    parameters: city,
    execute: async ({ city }) => JSON.stringify({ city, ...WEATHER[city] }),
  }),
  agents.tool({
    name: "get_time",
    description: "The local time in a city.",
    parameters: city,
    execute: async ({ city }) => JSON.stringify({ city, time: city === "Tokyo" ? "21:05" : "14:05" }),
  }),
  agents.tool({
    name: "get_forecast",
    description: "The weather forecast for a city over the next days.",
    parameters: z.object({ city: z.string(), days: z.number().int() }),
    execute: async () => {
      throw new Error("forecast service unavailable");
    },
  }),
];
const agent = new agents.Agent({ name: "weather_agent", instructions: input.instructions, model: input.model, tools });
// The record of a turn is the items the run added, in the Python SDK's shape: function_call (name, arguments) and
// function_call_output (the text the tool returned, or the SDK's error text for a failing tool).
const item = ({ rawItem: raw }) =>
  raw.type === "function_call_result"
    ? { type: "function_call_output", call_id: raw.callId, output: raw.output?.text ?? raw.output }
    : raw;
let history = [];
const turns = [];
for (const user of input.turns) {
  const result = await agents.withTrace(
    "Weather chat",
    () => agents.run(agent, [...history, agents.user(user)]),
    { groupId: input.groupId },
  );
  history = result.history;
  turns.push({ input: user, new_items: result.newItems.map(item), final_output: result.finalOutput });
}
await agents.getGlobalTraceProvider().forceFlush();
await provider.forceFlush();
const otlp = JSON.parse(new TextDecoder().decode(JsonTraceSerializer.serializeRequest(exporter.getFinishedSpans())));
writeFileSync(input.output, JSON.stringify({ otlp, turns }));
await provider.shutdown();
