"""Grouping rebuilt invocations into conversations, and pairing a conversation with its golden eval case."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from otel_eval.model import EvalCase, EvalSet, Invocation, Rubric, TracedInvocation, content_text


@dataclass(slots=True)
class Conversation:
    """The invocations of one session across traces (or of one trace without a session id), in time order."""

    invocations: list[TracedInvocation]
    session_id: str | None = None
    eval_case: EvalCase | None = None
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
    def expected(self) -> list[Invocation] | None:
        """The paired case's conversation, or None."""
        return None if self.eval_case is None else self.eval_case.conversation


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


def _normalise(text: str) -> str:
    return text.strip().casefold()


def find_eval_case(eval_set: EvalSet, first_user_text: str, eval_id: str | None = None) -> tuple[EvalCase | None, str]:
    """The case for a conversation: ``eval_id`` when given, the only case, else the case whose first user text equals
    the conversation's (ignoring case and surrounding space). Returns the case (or None) and a note saying how."""
    cases = eval_set.eval_cases
    if eval_id is not None:
        for case in cases:
            if case.eval_id == eval_id:
                return case, f"eval case {eval_id!r} chosen by --eval-id"
        return None, f"eval set {eval_set.eval_set_id!r} has no case {eval_id!r}"
    if len(cases) == 1:
        return cases[0], "the eval set's only case"
    wanted = _normalise(first_user_text)
    for case in cases:
        if case.conversation and _normalise(content_text(case.conversation[0].user_content)) == wanted:
            return case, "matched on the first user message"
        if case.conversation_scenario and _normalise(case.conversation_scenario.starting_prompt) == wanted:
            return case, "matched on the scenario's starting prompt"
    return None, f"no case of eval set {eval_set.eval_set_id!r} starts with the user message {first_user_text[:60]!r}"


def pair_conversations(
    conversations: Sequence[Conversation], eval_set: EvalSet | None, eval_id: str | None = None
) -> None:
    """Sets ``eval_case`` (or ``pairing_note``) on each conversation."""
    if eval_set is None:
        return
    for conversation in conversations:
        case, note = find_eval_case(eval_set, conversation.first_user_text, eval_id)
        conversation.eval_case = case
        conversation.pairing_note = None if case else note


def with_case_rubrics(conversation: Conversation) -> list[TracedInvocation]:
    """Actual invocations with the case's and the expected invocations' rubrics copied on, as ADK's eval service does."""
    case = conversation.eval_case
    if case is None:
        return conversation.invocations
    expected = case.conversation or []
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
