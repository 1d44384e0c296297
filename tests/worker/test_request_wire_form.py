"""The requests' wire form (:meth:`EvaluationRequest.to_wire`): written without its None fields, a request reads back
equal to the one written with them, and a worker scores both alike, on every recorded, framework, hostile and session
trace the repository holds.

Why it holds (and what these tests keep true): a field left out reads back as its default, and every field of the
request's models (ours and the google-genai ones validated inside them) that may be None defaults to None, but one
(``EvalCase.final_session_state``); models that keep unknown keys (``EvalCase``, ``SessionInput``) would lose their None
ones. A request whose eval case has either is written whole. The parsed requests are then equal field for field, so
only what reads which fields were *set* could tell them apart: on the worker's path, ``Part``'s own validator drops
its None keywords in both forms, the judge prompts dump with ``exclude_unset`` together with ``exclude_none`` (a None
field is left out either way), and the request's criteria are a plain mapping, which the wire form keeps whole.
"""

from __future__ import annotations

import asyncio
import json
import types
import typing
from typing import Any

import pytest
from google.genai import types as real_genai
from pydantic import BaseModel, BeforeValidator

from otel_eval.emit import Emitters
from otel_eval.evaluation.core import EvaluationCore
from otel_eval.model import EvalCase, SessionInput, TracedInvocation
from otel_eval.model.genai import Blob, Part
from otel_eval.model.messages import EvaluationRecord, EvaluationRequest
from otel_eval.reconstruct import rebuild_traces
from otel_eval.transport.base import ExportResult
from otel_eval.transport.kafka import KafkaInvocationExporter
from otel_eval.worker.consumer import parse_request
from otel_eval.worker.service import Worker
from tests._kafka import create_topics, producer, random_topic, read_topic
from tests.reconstruct.test_rebuild_on_demand import DEFAULT_WITH_REFERENCE, EFFICIENCY, _traces
from tests.transport._requests import request
from tests.waiting import wait_until_async
from tests.worker._harness import MemoryTelemetry, running_worker, worker_settings

_JUDGE_DUMP: dict[str, Any] = {"exclude_unset": True, "exclude_defaults": True, "exclude_none": True}
"""How the judge prompts dump the invocation's parts (``otel_eval.metrics._judge_context``)."""


def _admits_none(annotation: Any) -> bool:
    if annotation is type(None) or annotation is Any:
        return True
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_admits_none(a) for a in typing.get_args(annotation))
    if origin is typing.Annotated:
        return _admits_none(typing.get_args(annotation)[0])
    return False


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    found = [annotation] if isinstance(annotation, type) and issubclass(annotation, BaseModel) else []
    return found + [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


def _genai_models_validated(field: Any) -> list[type[BaseModel]]:
    """The google-genai models a field's ``_genai_validator`` validates its value with."""
    found = []
    for meta in field.metadata:
        if isinstance(meta, BeforeValidator) and meta.func.__closure__:
            cells = dict(
                zip(meta.func.__code__.co_freevars, (c.cell_contents for c in meta.func.__closure__), strict=True)
            )
            genai_type = getattr(real_genai, cells.get("type_name", ""), None)
            if isinstance(genai_type, type) and issubclass(genai_type, BaseModel):
                found.append(genai_type)
    return found


def _request_models() -> set[type[BaseModel]]:
    seen: set[type[BaseModel]] = set()
    todo: list[type[BaseModel]] = [EvaluationRequest]
    while todo:
        model = todo.pop()
        if model not in seen:
            seen.add(model)
            for field in model.model_fields.values():
                todo += _models_in(field.annotation) + _genai_models_validated(field)
    return seen


def test_every_field_that_may_be_none_defaults_to_none_but_the_one_written_whole() -> None:
    """What makes leaving None fields out exact: a new field that breaks it fails here (then write it whole too)."""
    models = _request_models()
    assert len(models) > 40 and real_genai.ExecutableCode in models  # the genai models inside were walked too
    other_defaults = {
        (model.__name__, name)
        for model in models
        for name, field in model.model_fields.items()
        if _admits_none(field.annotation) and (field.default_factory is not None or field.default is not None)
    }
    assert other_defaults == {("EvalCase", "final_session_state")}
    assert {m.__name__ for m in models if m.model_config.get("extra") == "allow"} == {"EvalCase", "SessionInput"}


def _case(**fields: Any) -> EvalCase:
    return EvalCase(eval_id="case-1", conversation=[request(7).invocations[0].invocation], **fields)


@pytest.mark.parametrize(
    ("eval_case", "lean"),
    [
        (None, True),
        (_case(), True),
        (_case(final_session_state=None), False),
        (_case(reviewer=None), False),
        (_case(session_input=SessionInput(app_name="a", user_id="u", note=None)), False),
        (_case(session_input=SessionInput(app_name="a", user_id="u")), True),
    ],
    ids=["no-case", "case", "case-state-none", "case-extra", "session-input-extra", "session-input"],
)
def test_a_request_reads_back_equal_from_either_form(eval_case: EvalCase | None, lean: bool) -> None:
    written = request(3)
    written.invocations[0].invocation.user_content.parts.append(  # type: ignore[union-attr]
        Part(inline_data=Blob(data=b"\x00\x01 image", mime_type="image/png"))
    )
    written.invocations[0].invocation.intermediate_data.tool_uses[0].args = {"city": None}  # type: ignore[union-attr]
    written.eval_case = eval_case
    written.criteria = {"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": None}}
    whole, wire = written.model_dump_json().encode(), written.to_wire()
    assert (wire == whole) is not lean
    if lean:
        assert len(wire) < 0.7 * len(whole)
        assert wire.count(b"null") == 2  # the tool call's argument and the criterion's value: not fields
    from_wire, from_whole = parse_request(wire, "t/0@1"), parse_request(whole, "t/0@1")
    assert from_wire == from_whole == written
    assert from_wire.criteria == json.loads(whole)["criteria"]
    assert from_wire.model_dump(**_JUDGE_DUMP) == from_whole.model_dump(**_JUDGE_DUMP)


def _request_with_case(invocation: TracedInvocation) -> EvaluationRequest:
    """The request a processor with an eval set sends: the invocation and the case it pairs with (itself)."""
    case = EvalCase(eval_id=f"case-{invocation.span_id}", conversation=[invocation.invocation])
    return EvaluationRequest(invocations=[invocation], eval_case=case, eval_set_id="set-1")


def _results(records: list[EvaluationRecord]) -> list[dict[str, Any]]:
    return [record.model_dump(exclude={"evaluated_at"}) for record in records]


@pytest.mark.usefixtures("quiet_adk")
def test_requests_written_without_none_fields_score_as_written_whole_on_every_trace() -> None:
    core = EvaluationCore(judge_configured=False, emitters=Emitters(None))  # the default criteria
    checked = lean = 0
    loop = asyncio.new_event_loop()
    try:
        for name, spans in _traces():
            for trace in rebuild_traces(spans):
                for invocation in trace.invocations:
                    for written in (EvaluationRequest(invocations=[invocation]), _request_with_case(invocation)):
                        whole, wire = written.model_dump_json().encode(), written.to_wire()
                        lean += wire != whole
                        from_wire, from_whole = parse_request(wire, name), parse_request(whole, name)
                        assert from_wire == from_whole == written, name
                        assert from_wire.model_dump(**_JUDGE_DUMP) == from_whole.model_dump(**_JUDGE_DUMP), name
                        scored = [loop.run_until_complete(core.evaluate(r)) for r in (from_wire, from_whole)]
                        assert _results(scored[0]) == _results(scored[1]), name
                        metrics = {r.metric_name for r in scored[0]}
                        assert metrics == set(DEFAULT_WITH_REFERENCE if written.eval_case else EFFICIENCY), name
                        checked += 1
    finally:
        loop.close()
    assert checked > 500 and lean == checked  # every request of every invocation, each written without nulls


@pytest.mark.kafka
@pytest.mark.integration
async def test_a_worker_scores_requests_already_on_the_topic_as_the_exporter_now_writes_them(
    kafka_bootstrap: str,
) -> None:
    """Records written whole (by an exporter before this change) and the exporter's own, of the same requests, each
    read by a worker of its own: the same results, ids included, on the results topics."""
    sent = [request(n) for n in range(6)]
    sent += [EvaluationRequest(invocations=[request(n).invocations[0]], eval_case=_case()) for n in range(6, 8)]
    sent += [EvaluationRequest(invocations=[request(8).invocations[0]], eval_case=_case(final_session_state=None))]
    topics = {form: (random_topic(f"requests-{form}"), random_topic(f"results-{form}")) for form in ("whole", "wire")}
    await create_topics(kafka_bootstrap, [t for pair in topics.values() for t in pair], partitions=2)
    async with producer(kafka_bootstrap) as whole:
        for written in sent:
            await whole.send_and_wait(
                topics["whole"][0], value=written.model_dump_json().encode(), key=written.record_key.encode()
            )
    exporter = KafkaInvocationExporter(kafka_bootstrap, topic=topics["wire"][0])
    try:
        assert exporter.export(sent) is ExportResult.SUCCESS
        assert await asyncio.to_thread(exporter.force_flush, 15_000)
    finally:
        await asyncio.to_thread(exporter.shutdown, 5_000)
    on_topic = await read_topic(kafka_bootstrap, topics["wire"][0], expected=len(sent))
    assert sorted(r.value for r in on_topic) == sorted(w.to_wire() for w in sent)
    assert sum(b"null" not in r.value for r in on_topic) == len(sent) - 1  # all but the whole-written case

    expected = 4 * 6 + 6 * 3  # the efficiency metrics; with a case, the two reference metrics too
    whole_results = await _scored_by_a_worker(kafka_bootstrap, *topics["whole"], expected)
    assert await _scored_by_a_worker(kafka_bootstrap, *topics["wire"], expected) == whole_results


async def _scored_by_a_worker(bootstrap: str, requests_topic: str, results_topic: str, expected: int) -> list[Any]:
    """The results (but their time) a worker of its own group publishes for the requests on ``requests_topic``."""
    telemetry = MemoryTelemetry()
    settings = worker_settings(
        bootstrap,
        kafka_requests_topic=requests_topic,
        kafka_results_topic=results_topic,
        kafka_group_id=random_topic("group"),
    )
    core = EvaluationCore(emitters=telemetry.emitters(), judge_configured=False)
    async with running_worker(Worker(settings, core=core, telemetry=telemetry.providers)):
        await wait_until_async(lambda: len(telemetry.events()) >= expected, timeout=60, what=f"{expected} results")
    published = await read_topic(bootstrap, results_topic, expected=expected)
    telemetry.shutdown()
    records = [EvaluationRecord.model_validate_json(r.value).model_dump(exclude={"evaluated_at"}) for r in published]
    assert len(records) == expected
    return sorted(records, key=lambda r: str(r["result_id"]))
