"""Per-invocation metric cost: otel-eval's deterministic evaluators vs ADK 2.13's own, on the same generated inputs.

Both sides score the same conversations (2 invocations each, with repeated tools, nested args, ints vs floats and
English/CJK/Thai responses), built as their own invocation objects before timing. Each side evaluates conversation by
conversation, as both services do, with one evaluator object per metric. otel-eval's stemming cache is emptied before
every timed repeat, so each repeat starts cold. The scores of both sides are checked to be equal before timing.

Run: ``python -m benchmarks.bench_metrics [--conversations N] [--repeat N]``. Target: >= 10x faster per invocation.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
from collections.abc import Callable
from typing import Any

from google.adk.evaluation import eval_case as adk_eval_case
from google.adk.evaluation.eval_metrics import EvalMetric as AdkEvalMetric
from google.adk.evaluation.eval_metrics import ToolTrajectoryCriterion as AdkToolTrajectoryCriterion
from google.adk.evaluation.final_response_match_v1 import RougeEvaluator
from google.adk.evaluation.trajectory_evaluator import TrajectoryEvaluator

from benchmarks._common import Row, interleaved_medians, machine, print_rows
from otel_eval.metrics import Evaluator, default_registry
from otel_eval.metrics._text import clear_caches
from otel_eval.model import BaseCriterion, Invocation, TracedInvocation

Json = dict[str, Any]
TOOLS = ("get_weather", "search_flights", "book_hotel", "convert_currency")
_SENTENCES = (
    "the weather in Paris is sunny today with a light breeze and mild temperatures of about twenty degrees",
    "flights from Berlin to Tokyo leave every morning booking confirmed for two rooms at the central hotel",
    "running dogs were seen near the river prices converted at the current exchange rate",
)
WORDS = [word for sentence in _SENTENCES for word in sentence.split()]
DEFAULT_CRITERIA = ("tool_trajectory_avg_score EXACT", "response_match_score")
FOREIGN = ("東京", "は", "晴れ", "です", "서울", "날씨", "สวัสดีครับ", "ภาษาไทย", "café", "naïve")


def _args(rng: random.Random) -> Json:
    args: Json = {"city": rng.choice(["Paris", "Tokyo", "Berlin"]), "days": rng.choice([1, 2, 3, 2.0])}
    if rng.random() < 0.5:
        args["options"] = {"units": rng.choice(["metric", "imperial"]), "tags": [rng.randint(0, 3) for _ in range(2)]}
    return args


def _text(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(8, 25))]
    if rng.random() < 0.3:
        words += [rng.choice(FOREIGN) for _ in range(rng.randint(1, 4))]
    return " ".join(words).capitalize() + "."


def _invocation(calls: list[Json], text: str) -> Json:
    return {
        "user_content": {"role": "user", "parts": [{"text": "plan my trip"}]},
        "final_response": {"role": "model", "parts": [{"text": text}]},
        "intermediate_data": {"tool_uses": calls},
    }


def generate(conversations: int, seed: int = 7) -> list[tuple[list[Json], list[Json]]]:
    """``conversations`` (actual, expected) pairs of 2 invocations; about half the trajectories match."""
    rng = random.Random(seed)
    result = []
    for _ in range(conversations):
        actual, expected = [], []
        for _ in range(2):
            calls = [{"name": rng.choice(TOOLS), "args": _args(rng)} for _ in range(rng.randint(1, 4))]
            wanted = [dict(c) for c in calls]
            roll = rng.random()
            if roll < 0.2:
                rng.shuffle(wanted)
            elif roll < 0.35:
                wanted[rng.randrange(len(wanted))]["args"] = _args(rng)
            elif roll < 0.45:
                wanted.pop()
            text = _text(rng)
            reference = text if rng.random() < 0.2 else _text(rng)
            actual.append(_invocation(calls, text))
            expected.append(_invocation(wanted, reference))
        result.append((actual, expected))
    return result


def _ours(data: list[tuple[list[Json], list[Json]]]) -> list[tuple[list[TracedInvocation], list[Invocation]]]:
    return [
        (
            [
                TracedInvocation(
                    invocation=Invocation.model_validate(a), trace_id="1" * 32, span_id="1" * 16, convention="adk"
                )
                for a in actual
            ],
            [Invocation.model_validate(e) for e in expected],
        )
        for actual, expected in data
    ]


def _adk(data: list[tuple[list[Json], list[Json]]]) -> list[tuple[list[Any], list[Any]]]:
    validate = adk_eval_case.Invocation.model_validate
    return [([validate(a) for a in actual], [validate(e) for e in expected]) for actual, expected in data]


def _run_ours(evaluator: Evaluator, conversations: list[tuple[list[TracedInvocation], list[Invocation]]]) -> list[Any]:
    async def run() -> list[Any]:
        return [await evaluator.evaluate(actual, expected) for actual, expected in conversations]

    return asyncio.run(run())


def _run_adk(evaluator: Any, conversations: list[tuple[list[Any], list[Any]]]) -> list[Any]:
    return [evaluator.evaluate_invocations(actual, expected) for actual, expected in conversations]


def _pairs(args: argparse.Namespace) -> list[tuple[str, Callable[[], Evaluator], Callable[[], Any]]]:
    registry = default_registry()
    pairs: list[tuple[str, Callable[[], Evaluator], Callable[[], Any]]] = []
    for match_type in ("EXACT", "IN_ORDER", "ANY_ORDER"):
        criterion = {"threshold": 1.0, "match_type": match_type}
        pairs.append(
            (
                f"tool_trajectory_avg_score {match_type}",
                lambda c=criterion: registry.create("tool_trajectory_avg_score", BaseCriterion.model_validate(c)),
                lambda c=criterion: TrajectoryEvaluator(
                    eval_metric=AdkEvalMetric(
                        metric_name="tool_trajectory_avg_score", criterion=AdkToolTrajectoryCriterion.model_validate(c)
                    )
                ),
            )
        )
    pairs.append(
        (
            "response_match_score",
            lambda: registry.create("response_match_score", BaseCriterion(threshold=0.8)),
            lambda: RougeEvaluator(AdkEvalMetric(metric_name="response_match_score", threshold=0.8)),
        )
    )
    return pairs


def main(argv: list[str] | None = None) -> list[Row]:
    """Times both sides, prints the table and returns its rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--conversations", type=int, default=500, help="conversations of 2 invocations (default 500)")
    parser.add_argument("--repeat", type=int, default=5, help="timed repeats per side, median taken (default 5)")
    args = parser.parse_args(argv)
    data = generate(args.conversations)
    ours, adk = _ours(data), _adk(data)
    # The inputs live for the whole run: keep them out of the collector's scans so that neither side pays for
    # collections of the other's objects at random moments.
    gc.collect()
    gc.freeze()
    invocations = 2 * args.conversations
    rows: list[Row] = []
    default_criteria = [0.0, 0.0]  # ADK's default eval config: trajectory (EXACT) + ROUGE
    for name, make_ours, make_adk in _pairs(args):
        our_evaluator, adk_evaluator = make_ours(), make_adk()
        ours_scores = [r.overall_score for r in _run_ours(our_evaluator, ours)]
        adk_scores = [r.overall_score for r in _run_adk(adk_evaluator, adk)]
        if ours_scores != adk_scores:
            raise SystemExit(f"{name}: scores differ from ADK's; refusing to time a different computation")

        def run_ours(evaluator: Evaluator = our_evaluator) -> None:
            clear_caches()
            _run_ours(evaluator, ours)

        ours_seconds, adk_seconds = interleaved_medians(
            [run_ours, lambda evaluator=adk_evaluator: _run_adk(evaluator, adk)], args.repeat
        )
        if name in DEFAULT_CRITERIA:
            default_criteria[0] += ours_seconds
            default_criteria[1] += adk_seconds
        rows.append(_row(name, ours_seconds, adk_seconds, invocations))
    rows.append(_row("default criteria: trajectory EXACT + ROUGE", *default_criteria, invocations))
    print(f"# per-invocation metric cost, otel-eval vs google-adk 2.13 evaluators\n\n{machine()}")
    print(f"{args.conversations} conversations x 2 invocations, median of {args.repeat} repeats")
    print_rows("microseconds per invocation (ours vs ADK's; ratio = ADK / ours)", rows)
    print(
        "\nnote: tool_trajectory_avg_score is a few list comparisons per invocation on both sides, so its cost is the "
        "result objects; otel-eval also builds a one-line explanation and the expected/actual calls for every failed "
        "invocation, which ADK's evaluator does not."
    )
    return rows


def _row(name: str, ours_seconds: float, adk_seconds: float, invocations: int) -> Row:
    ratio = adk_seconds / ours_seconds
    return Row(
        benchmark=name,
        ours=f"{ours_seconds / invocations * 1e6:.1f} us",
        baseline=f"{adk_seconds / invocations * 1e6:.1f} us",
        ratio=ratio,
        target=">= 10x",
        met=ratio >= 10,
    )


if __name__ == "__main__":
    main()
