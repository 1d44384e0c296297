"""``otel-eval run``'s results as they come: conversations scored a window at a time, written out one by one.

Nothing here holds more than the window of conversations being scored: the ``--output json`` document and the
``--results-dir`` file are written incrementally (the same bytes as dumping the whole list at once), and what the
exit code needs is kept as counters (:class:`RunTally`).
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pydantic_core

from otel_eval import semconv
from otel_eval.cli._results_dir import case_result
from otel_eval.evaluation import (
    ConversationReport,
    MetricOutcome,
    MetricPlan,
    all_inline,
    evaluate_conversation,
    evaluate_conversation_inline,
)
from otel_eval.judge import JUDGE_UNPARSEABLE
from otel_eval.metrics import INVALID_INPUT, NO_REFERENCE
from otel_eval.model import EvalSetResult, EvalStatus
from otel_eval.model.utf8_json import json_bytes

WINDOW = 32
"""Conversations scored at once (as ``evaluate_conversations``' default concurrency)."""


async def stream_reports(
    conversations: Iterator[Any], plan: MetricPlan, *, window: int = WINDOW, progress: Callable[[], None] | None = None
) -> AsyncIterator[ConversationReport]:
    """:func:`evaluate_conversation` over ``conversations``, at most ``window`` at once, reports in input order.

    A plan whose metrics all run inline (no judge: counts, matches) is scored one conversation after the other on
    the loop's thread, without a task per conversation (:func:`evaluate_conversation_inline`: the same reports)."""
    if all_inline(plan):
        for conversation in conversations:
            report = evaluate_conversation_inline(conversation, plan)
            if progress is not None:
                progress()
            yield report
        return
    pending: list[asyncio.Task[ConversationReport]] = []
    for conversation in conversations:
        pending.append(asyncio.ensure_future(evaluate_conversation(conversation, plan)))
        if len(pending) >= window:
            yield await _next(pending, progress)
    while pending:
        yield await _next(pending, progress)


async def _next(pending: list[asyncio.Task[ConversationReport]], progress: Callable[[], None] | None) -> Any:
    report = await pending.pop(0)
    if progress is not None:
        progress()
    return report


def _indented_json(payload: Any, prefix: str) -> str:
    """``payload`` as :func:`~otel_eval.cli._common.print_json` writes it, each line after the first under ``prefix``."""
    try:
        text = pydantic_core.to_json(payload, indent=2, inf_nan_mode="constants").decode()
    except pydantic_core.PydanticSerializationError:  # e.g. a lone surrogate in a recorded string, as print_json
        text = json.dumps(payload, indent=2)  # ASCII: any stdout writes a surrogate's escape
    return text.replace("\n", "\n" + prefix)


class JsonResults:
    """``{"results": [...]}`` on stdout, one element at a time (the bytes of ``print_json`` on the whole list)."""

    def __init__(self) -> None:
        self._count = 0

    def add(self, element: dict[str, Any]) -> None:
        """Writes one element of ``results``."""
        head = '{\n  "results": [\n    ' if self._count == 0 else ",\n    "
        sys.stdout.write(head + _indented_json(element, "    "))
        self._count += 1

    def close(self) -> None:
        """Ends the document."""
        sys.stdout.write('{\n  "results": []\n}\n' if self._count == 0 else "\n  ]\n}\n")


class ResultsFile:
    """ADK's ``.evalset_result.json`` for ``--results-dir``, its case results spooled to a temporary file as they
    come (``spool``: a text file open for reading and writing); the file is assembled at :meth:`close`, when the app
    name (the first agent name met) is known."""

    def __init__(self, directory: Path, eval_set_id: str, spool: IO[str]) -> None:
        self._directory, self._eval_set_id, self._cases = directory, eval_set_id, spool
        self._count = 0
        self.app: str | None = None

    def add(self, report: ConversationReport) -> None:
        """Spools one conversation's ``EvalCaseResult``."""
        if self.app is None:
            self.app = next((inv.agent_name for inv in report.conversation.invocations if inv.agent_name), None)
        text = json_bytes(case_result(report, self._eval_set_id), indent=2).decode().replace("\n", "\n    ")
        self._cases.write(("\n    " if self._count == 0 else ",\n    ") + text)
        self._count += 1

    def close(self) -> Path | None:
        """Writes ``<app>_<eval_set_id>_<unix time>.evalset_result.json`` (ADK's naming); None when nothing came."""
        if self._count == 0:
            return None
        self._directory.mkdir(parents=True, exist_ok=True)
        result_id = f"{self.app or 'otel_eval'}_{self._eval_set_id}_{time.time()}"
        shell = EvalSetResult(
            eval_set_result_id=result_id,
            eval_set_result_name=result_id,
            eval_set_id=self._eval_set_id,
            creation_timestamp=time.time(),
        )
        head, tail = json_bytes(shell, indent=2).decode().split('"eval_case_results": []', 1)
        path = self._directory / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', result_id)}.evalset_result.json"
        with path.open("w", encoding="utf-8") as out:
            out.write(head + '"eval_case_results": [')
            self._cases.seek(0)
            shutil.copyfileobj(self._cases, out)
            out.write("\n  ]" + tail)
        return path


def spool_file() -> IO[str]:
    """A private temporary text file for :class:`ResultsFile` (deleted when closed)."""
    return tempfile.TemporaryFile("w+", encoding="utf-8", prefix="otel-eval-cases-")


UNCHECKED: frozenset[str] = frozenset(
    {
        NO_REFERENCE,
        INVALID_INPUT,
        semconv.ERROR_TYPE_CUSTOM_METRIC_ERROR,
        semconv.ERROR_TYPE_CUSTOM_METRIC_TIMEOUT,
        semconv.ERROR_TYPE_CUSTOM_METRIC_INVALID_RESULT,
        JUDGE_UNPARSEABLE,
    }
)
"""Besides the judge's, the reasons that leave a metric with a threshold evaluated on no invocation of a run with its
threshold compared with nothing (exit 3): no reference (no eval set, or no case paired), what the metric needs missing
from its criterion or eval case (``invalid_input``: a rubric-based metric without rubrics), a custom metric that
raised, timed out or returned no result, a judge whose every reply could not be read as a verdict
(``judge_unparseable``: a small model that does not follow the format). Other content-side outcomes (no content
captured, an incomplete context, a reply too long, suspected prompt injection) and budget refusals are not among
them."""


class RunTally:
    """What the exit code needs from every report, as counters: how many, whether one FAILED, the metrics the judge
    could not evaluate on any invocation (see :func:`~otel_eval.cli.run.judge_unusable_metrics`) and the metrics with
    a threshold evaluated on no invocation for one of the ``unchecked`` reasons (:meth:`unchecked`)."""

    def __init__(self, judge_unusable: frozenset[str], unchecked: frozenset[str] = UNCHECKED) -> None:
        self._judge_unusable = judge_unusable
        self._unchecked_reasons = unchecked
        self.count = 0
        self.failed = False
        self._evaluated: set[str] = set()
        self._stopped: dict[str, str] = {}
        self._unchecked: dict[str, tuple[str, str]] = {}
        self.cases: set[str] = set()
        """The ids of the eval cases some conversation paired with."""

    def add(self, report: ConversationReport) -> None:
        """Counts one conversation's outcomes."""
        self.count += 1
        if report.conversation.eval_case is not None:
            self.cases.add(report.conversation.eval_case.eval_id)
        for outcome in report.outcomes:
            self._add(outcome)

    def _add(self, outcome: MetricOutcome) -> None:
        name, result = outcome.metric.name, outcome.result
        self.failed = self.failed or result.overall_eval_status is EvalStatus.FAILED
        if name in self._evaluated:
            return  # evaluated on an invocation already: nothing this outcome says changes the exit code
        if result.overall_eval_status is not EvalStatus.NOT_EVALUATED or any(
            entry.eval_status is not EvalStatus.NOT_EVALUATED for entry in result.per_invocation_results
        ):
            self._evaluated.add(name)
            return
        error_types = [result.error_type, *(entry.error_type for entry in result.per_invocation_results)]
        reason = next((e for e in error_types if e in self._judge_unusable), None)
        if reason is not None:
            self._stopped.setdefault(name, reason)
        unchecked = next((e for e in error_types if e in self._unchecked_reasons), None)
        if outcome.threshold is not None and unchecked is not None and name not in self._unchecked:
            explanations = [result.explanation, *(entry.explanation for entry in result.per_invocation_results)]
            self._unchecked[name] = (unchecked, next((e for e in explanations if e), ""))

    def judge_unusable(self) -> dict[str, str]:
        """Metrics evaluated on no invocation of any conversation, each with the judge error that stopped them."""
        return {name: reason for name, reason in self._stopped.items() if name not in self._evaluated}

    def unchecked(self) -> dict[str, tuple[str, str]]:
        """Metrics with a threshold evaluated on no invocation of any conversation, each with the first of the
        ``unchecked`` reasons met (its error type and explanation): their threshold was compared with nothing."""
        return {name: why for name, why in self._unchecked.items() if name not in self._evaluated}
