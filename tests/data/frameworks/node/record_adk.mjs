// Runs one scenario's turns through ADK for JavaScript; writes {"otlp": ..., "turns": [...]} to input.output.
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { JsonTraceSerializer } from "@opentelemetry/otlp-transformer";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { readFileSync, writeFileSync } from "node:fs";

const input = JSON.parse(readFileSync(0, "utf-8"));
const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ "service.name": "adk_js" }),
  spanProcessors: [new SimpleSpanProcessor(exporter)],
});
provider.register();
// ADK gets its tracer when it is loaded, from its own copy of the OpenTelemetry API: the provider is registered first.
const { AgentTool, FunctionTool, InMemoryRunner, LlmAgent } = await import("@google/adk");

const WEATHER = {
  Paris: { temperature_c: 18, conditions: "cloudy" },
  Tokyo: { temperature_c: 24, conditions: "sunny" },
  Rome: { temperature_c: 27, conditions: "clear" },
};
const tools = [
  new FunctionTool({
    name: "get_weather",
    description: "The current weather in a city.",
    parameters: { type: "OBJECT", properties: { city: { type: "STRING" } }, required: ["city"] },
    execute: ({ city }) => ({ city, ...WEATHER[city] }),
  }),
  new FunctionTool({
    name: "get_time",
    description: "The local time in a city.",
    parameters: { type: "OBJECT", properties: { city: { type: "STRING" } }, required: ["city"] },
    execute: ({ city }) => ({ city, time: city === "Tokyo" ? "21:05" : "14:05" }),
  }),
  new FunctionTool({
    name: "get_forecast",
    description: "The weather forecast for a city over the next days.",
    parameters: {
      type: "OBJECT",
      properties: { city: { type: "STRING" }, days: { type: "INTEGER" } },
      required: ["city", "days"],
    },
    execute: () => {
      throw new Error("forecast service unavailable");
    },
  }),
];
// With "transfer": the clock tool belongs to a sub-agent the root agent transfers to (ADK's transfer_to_agent); with
// "agentTool": to an agent the root agent calls as a tool (AgentTool).
const clock = input.transfer || input.agentTool
  ? new LlmAgent({
      name: "time_agent",
      description: "Tells the local time in a city.",
      model: input.model,
      instruction: "You tell the time. Use the tool.",
      tools: tools.filter((tool) => tool.name === "get_time"),
    })
  : undefined;
const agent = new LlmAgent({
  name: "weather_agent",
  model: input.model,
  instruction: input.instructions,
  tools: clock
    ? [...tools.filter((tool) => tool.name !== "get_time"), ...(input.agentTool ? [new AgentTool({ agent: clock })] : [])]
    : tools,
  subAgents: input.transfer ? [clock] : [],
});
const runner = new InMemoryRunner({ agent, appName: "weather_app" });
const session = await runner.sessionService.createSession({ appName: "weather_app", userId: "user" });
const turns = [];
for (const user of input.turns) {
  const events = [];
  try {
    for await (const event of runner.runAsync({
      userId: "user",
      sessionId: session.id,
      newMessage: { role: "user", parts: [{ text: user }] },
    })) {
      events.push(event);
    }
  } catch (error) {
    events.push({ error: String(error) });
  }
  turns.push({ user, events: JSON.parse(JSON.stringify(events)) });
}
await provider.forceFlush();
const otlp = JSON.parse(new TextDecoder().decode(JsonTraceSerializer.serializeRequest(exporter.getFinishedSpans())));
writeFileSync(input.output, JSON.stringify({ otlp, turns }));  // stdout has ADK's log lines
await provider.shutdown();
