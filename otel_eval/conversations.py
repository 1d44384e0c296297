"""Grouping rebuilt invocations into conversations (pairing them with eval cases is :mod:`otel_eval.evaluation`'s)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from otel_eval.model import ConversationScenario, EvalCase, Invocation, Rubric, TracedInvocation, content_text


@dataclass(slots=True)
class Conversation:
    """The invocations of one session across traces (or of one trace without a session id), in time order."""

    invocations: list[TracedInvocation]
    session_id: str | None = None
    eval_case: EvalCase | None = None
    expected: list[Invocation] | None = None
    """The paired case's expected invocations (None: no case, or a case with only a conversation scenario)."""
    pairing_note: str | None = field(default=None)
    """Why no eval case was paired, when an eval set was given but none matched."""

    @property
    def trace_ids(self) -> list[str]:
        """Trace ids in first-seen order."""
        return list(dict.fromkeys(inv.trace_id for inv in self.invocations))

    @property
    def first_user_text(self) -> str:
        """The first invocation's user text ('' when there is none)."""
        return content_text(self.invocations[0].invocation.user_content) if self.invocations else ""

    @property
    def scenario(self) -> ConversationScenario | None:
        """The paired case's conversation scenario (user-simulator cases), or None."""
        return None if self.eval_case is None else self.eval_case.conversation_scenario


def group_conversations(invocations: Iterable[TracedInvocation]) -> list[Conversation]:
    """Invocations grouped by session id (else by trace id), each group and the groups in start-time order."""
    groups: dict[tuple[str, str], list[TracedInvocation]] = {}
    for inv in invocations:
        key = ("session", inv.session_id) if inv.session_id else ("trace", inv.trace_id)
        groups.setdefault(key, []).append(inv)
    conversations = []
    for (kind, group_id), members in groups.items():
        members.sort(key=lambda inv: (inv.start_time_ns, inv.trace_id, inv.span_id))
        conversations.append(Conversation(invocations=members, session_id=group_id if kind == "session" else None))
    conversations.sort(key=lambda c: (c.invocations[0].start_time_ns, c.invocations[0].trace_id))
    return conversations


def with_case_rubrics(conversation: Conversation) -> list[TracedInvocation]:
    """Actual invocations with the case's and the expected invocations' rubrics copied on, as ADK's eval service does."""
    case = conversation.eval_case
    if case is None:
        return conversation.invocations
    expected = conversation.expected or []
    result = []
    for index, traced in enumerate(conversation.invocations):
        rubrics: list[Rubric] = list(traced.invocation.rubrics or [])
        rubrics += case.rubrics or []
        if index < len(expected):
            rubrics += expected[index].rubrics or []
        if not rubrics:
            result.append(traced)
            continue
        invocation = traced.invocation.model_copy(update={"rubrics": rubrics})
        result.append(traced.model_copy(update={"invocation": invocation}))
    return result
