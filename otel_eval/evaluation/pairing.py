"""Golden-case pairing: which eval case, and which expected turns, a conversation is compared with.

**The pairing rule.** User texts are compared after :func:`normalise_text` (case folded, surrounding space dropped,
runs of whitespace collapsed to one space). A conversation's candidate case is the case chosen for it (``--eval-id``
offline, the request's ``eval_case`` online), else the first case of the eval set with a turn whose user text equals
the conversation's first user text (the first its invocations hold: a turn no model was called in may hold none),
else the first case whose scenario's starting prompt equals it (a scenario case pairs without expected turns). The expected invocations are, for each invocation, the case's turn with its user
text; else, when the case has exactly as many turns as the conversation has invocations, its turns by position;
else there are none: a chosen case stays paired without a reference, any other case does not pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from otel_eval.conversations import Conversation
from otel_eval.model import (
    EvalCase,
    EvalSet,
    Invocation,
    TracedInvocation,
    content_text,
)


def normalise_text(text: str) -> str:
    """User text as pairing compares it: case folded, runs of whitespace collapsed, surrounding space dropped."""
    return " ".join(text.split()).casefold()


def find_golden_turn(eval_cases: Sequence[EvalCase], user_text: str) -> tuple[EvalCase, int] | None:
    """The first case turn whose user text equals ``user_text`` (after :func:`normalise_text`), or None."""
    wanted = normalise_text(user_text)
    if not wanted:
        return None
    for case in eval_cases:
        for index, turn in enumerate(case.conversation or []):
            if normalise_text(content_text(turn.user_content)) == wanted:
                return case, index
    return None


class GoldenIndex:
    """The pairing rule's lookups in one eval set, made once: each normalised user text to its first case turn, each
    normalised scenario starting prompt to its first case. Pairing then costs one lookup, not a pass over every
    turn of every case (with 20,000 cases, ~35 ms an invocation that pairs with none).

    The eval set is read as it is when the index is made: one changed afterwards needs a new index.
    """

    __slots__ = ("eval_set", "prompts", "turns")

    def __init__(self, eval_set: EvalSet) -> None:
        self.eval_set = eval_set
        self.turns = _first_turns(eval_set.eval_cases)
        self.prompts: dict[str, EvalCase] = {}
        for case in eval_set.eval_cases:
            if case.conversation_scenario is not None:
                self.prompts.setdefault(normalise_text(case.conversation_scenario.starting_prompt), case)
        self.prompts.pop("", None)

    def golden_turn(self, user_text: str) -> tuple[EvalCase, int] | None:
        """:func:`find_golden_turn` over the whole eval set."""
        return self.turns.get(normalise_text(user_text))


def _first_turns(eval_cases: Sequence[EvalCase]) -> dict[str, tuple[EvalCase, int]]:
    """Each non-empty normalised user text of ``eval_cases`` to the first case turn that has it."""
    turns: dict[str, tuple[EvalCase, int]] = {}
    for case in eval_cases:
        for index, turn in enumerate(case.conversation or []):
            turns.setdefault(normalise_text(content_text(turn.user_content)), (case, index))
    turns.pop("", None)
    return turns


def shadowed_cases(eval_cases: Sequence[EvalCase]) -> list[tuple[EvalCase, EvalCase]]:
    """The cases the pairing rule never pairs a conversation with, each beside the earlier case that takes it: a case
    whose first user text is a turn's user text in an earlier case (e.g. two recorded traces asking the same question,
    made golden together). Only a chosen case (``--eval-id``) reaches it."""
    owners = _first_turns(eval_cases)
    shadowed = []
    for case in eval_cases:
        turns = case.conversation or []
        owner = owners.get(normalise_text(content_text(turns[0].user_content))) if turns else None
        if owner is not None and owner[0] is not case:
            shadowed.append((case, owner[0]))
    return shadowed


def shadowed_case_warnings(eval_set: EvalSet) -> list[str]:
    """One line per case of ``eval_set`` that :func:`shadowed_cases` finds, for the commands that read eval sets."""
    return [
        f"case {case.eval_id!r} is never paired: a conversation whose first user message is "
        f"{content_text((case.conversation or [])[0].user_content)[:60]!r} pairs with the earlier case "
        f"{earlier.eval_id!r} (--eval-id chooses a case)"
        for case, earlier in shadowed_cases(eval_set.eval_cases)
    ]


@dataclass(frozen=True, slots=True)
class Pairing:
    """A conversation's eval case and expected invocations (both None when no case pairs), and how they were found."""

    case: EvalCase | None
    expected: list[Invocation] | None
    note: str


_NO_EVAL_SET = Pairing(None, None, "no eval set")
"""The pairing of every conversation without an eval set (a frozen value: one for all)."""


def pair_invocations(
    invocations: Sequence[TracedInvocation],
    eval_set: EvalSet | None,
    *,
    chosen: EvalCase | None = None,
    index: GoldenIndex | None = None,
) -> Pairing:
    """The eval case and expected invocations of ``invocations``, by the pairing rule (see the module docs).

    ``index``: ``eval_set``'s :class:`GoldenIndex`, for a caller that pairs many conversations with one eval set
    (made here when None)."""
    if chosen is not None:
        expected = _expected_turns(chosen, invocations)
        note = f"eval case {chosen.eval_id!r} was chosen"
        if expected is None and chosen.conversation:
            note += (
                f", but its {len(chosen.conversation)} turn(s) cannot be paired with {len(invocations)} invocation(s)"
            )
        return Pairing(chosen, expected, note)
    if eval_set is None or not invocations:
        return _NO_EVAL_SET
    if index is None or index.eval_set is not eval_set:
        index = GoldenIndex(eval_set)
    # The first user message the spans hold: a turn no model was called in may have none (ADK's v2 spans).
    texts = (content_text(traced.invocation.user_content) for traced in invocations)
    first = next((text for text in texts if text.strip()), "")
    found = index.golden_turn(first)
    if found is not None:
        expected = _expected_turns(found[0], invocations)
        if expected is not None:
            return Pairing(found[0], expected, "matched on the user message")
        note = f"eval case {found[0].eval_id!r} starts like the conversation but its turns do not pair with it"
        return Pairing(None, None, note)
    scenario_case = index.prompts.get(normalise_text(first))
    if scenario_case is not None:
        return Pairing(scenario_case, None, "matched on the scenario's starting prompt")
    note = f"no case of eval set {eval_set.eval_set_id!r} has a turn with the user message {first[:60]!r}"
    return Pairing(None, None, note)


def _expected_turns(case: EvalCase, invocations: Sequence[TracedInvocation]) -> list[Invocation] | None:
    """Each invocation's turn by user text, else all turns by position when the counts agree, else None."""
    turns = case.conversation or []
    expected = []
    for traced in invocations:
        found = find_golden_turn([case], content_text(traced.invocation.user_content))
        if found is None:
            return list(turns) if turns and len(turns) == len(invocations) else None
        expected.append(turns[found[1]])
    return expected


def pair_conversations(
    conversations: Sequence[Conversation], eval_set: EvalSet | None, eval_id: str | None = None
) -> None:
    """Pairs each conversation (sets ``eval_case``, ``expected`` and, when none pairs, ``pairing_note``)."""
    if eval_set is None:
        return
    chosen = None
    if eval_id is not None:
        chosen = next((case for case in eval_set.eval_cases if case.eval_id == eval_id), None)
        if chosen is None:
            for conversation in conversations:
                conversation.pairing_note = f"eval set {eval_set.eval_set_id!r} has no case {eval_id!r}"
            return
    index = GoldenIndex(eval_set) if chosen is None else None
    for conversation in conversations:
        pairing = pair_invocations(conversation.invocations, eval_set, chosen=chosen, index=index)
        conversation.eval_case, conversation.expected = pairing.case, pairing.expected
        conversation.pairing_note = None if pairing.case else pairing.note
