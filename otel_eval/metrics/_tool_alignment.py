"""One-to-one, deterministic alignment of expected to actual tool calls (``tool_parameter_match``, ``tool_trajectory_f1``).

Two alignments, both pairing each expected call with at most one actual call and each actual call with at most one
expected call, and only pairs that the metric's ``eligible(expected_index, actual_index)`` accepts (always the same
tool name, plus whatever arguments the match mode requires):

- **ordered** (:func:`align_ordered`): a forward scan, as ADK PR #6726 and ADK's ``IN_ORDER`` trajectory match do.
  Expected calls are taken in order; each is paired with the first eligible actual call after the previously paired
  one; an expected call with no such actual call stays unpaired and the scan position does not move.
- **unordered** (:func:`align_unordered`): a maximum matching. It maximises, in this order of priority, (1) the number
  of pairs, (2) the sum of the pairs' scores (``tool_parameter_match`` passes the call's argument score, so repeated
  calls of one tool pair with the call whose arguments fit best), (3) closeness in position (the sum of
  ``|expected_index - actual_index|`` is minimised). The objective is folded into exact integer weights and solved
  with the Hungarian algorithm, so the result is exact and the same on every run and platform.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from otel_eval.model import Invocation
from otel_eval.model import genai as genai_types

Eligible = Callable[[int, int], bool]
"""``eligible(expected_index, actual_index)``: whether the two calls may be paired."""
PairScore = Callable[[int, int], Fraction]
"""``score(expected_index, actual_index)`` in [0, 1] of an eligible pair (unordered alignment's second priority)."""


def align(
    expected: Sequence[genai_types.FunctionCall],
    actual: Sequence[genai_types.FunctionCall],
    eligible: Eligible,
    *,
    ordered: bool,
    score: PairScore | None = None,
) -> list[int | None]:
    """``result[i]``: the actual call paired with expected call ``i``, or None; :func:`align_ordered` when
    ``ordered``, else :func:`align_unordered` (which uses ``score`` as its second priority)."""
    if not expected or not actual:
        return [None] * len(expected)
    if ordered:
        return align_ordered(len(expected), len(actual), eligible)
    return align_unordered([c.name for c in expected], [c.name for c in actual], eligible, score)


def align_ordered(expected_count: int, actual_count: int, eligible: Eligible) -> list[int | None]:
    """The forward-scan alignment: ``result[i]`` is the actual index paired with expected call ``i``, or None."""
    result: list[int | None] = [None] * expected_count
    position = 0
    for i in range(expected_count):
        for j in range(position, actual_count):
            if eligible(i, j):
                result[i] = j
                position = j + 1
                break
    return result


def align_unordered(
    expected_names: Sequence[str | None],
    actual_names: Sequence[str | None],
    eligible: Eligible,
    score: PairScore | None = None,
) -> list[int | None]:
    """The maximum alignment (see the module docstring); calls pair only within the same tool name."""
    result: list[int | None] = [None] * len(expected_names)
    actual_by_name: dict[str | None, list[int]] = defaultdict(list)
    for j, name in enumerate(actual_names):
        actual_by_name[name].append(j)
    expected_by_name: dict[str | None, list[int]] = defaultdict(list)
    for i, name in enumerate(expected_names):
        expected_by_name[name].append(i)
    for name, rows in expected_by_name.items():
        cols = actual_by_name.get(name)
        if cols:
            for i, j in _max_matching(rows, cols, eligible, score):
                result[i] = j
    return result


def _max_matching(
    rows: list[int], cols: list[int], eligible: Eligible, score: PairScore | None
) -> list[tuple[int, int]]:
    candidates = {(i, j): score(i, j) if score else Fraction(0) for i in rows for j in cols if eligible(i, j)}
    if not candidates:
        return []
    pairs_max = min(len(rows), len(cols))
    spread = rows[-1] + cols[-1] + 2  # > any |i - j|, so every closeness term below is >= 1
    denominator = math.lcm(*(s.denominator for s in candidates.values()))
    closeness_base = pairs_max * spread + 1  # > the largest possible sum of closeness terms
    pair_base = pairs_max * (denominator * closeness_base + spread) + 1  # > any sum of score and closeness terms
    weights = [[0] * len(cols) for _ in rows]
    for r, i in enumerate(rows):
        for c, j in enumerate(cols):
            pair_score = candidates.get((i, j))
            if pair_score is not None:
                scaled = pair_score.numerator * (denominator // pair_score.denominator)
                weights[r][c] = pair_base + scaled * closeness_base + (spread - abs(i - j))
    assignment = _hungarian_max(weights)
    return [(rows[r], cols[c]) for r, c in assignment if weights[r][c] > 0]


def _hungarian_max(weights: list[list[int]]) -> list[tuple[int, int]]:
    """A maximum-weight complete assignment of the smaller side (exact integer arithmetic), as (row, col) pairs."""
    transposed = len(weights) > len(weights[0])
    matrix = [list(column) for column in zip(*weights, strict=True)] if transposed else weights
    n, m = len(matrix), len(matrix[0])
    cost = [[-w for w in row] for row in matrix]
    # Kuhn-Munkres with potentials (1-based, column 0 is the virtual start), O(n^2 m).
    u = [0] * (n + 1)
    v = [0] * (m + 1)
    owner = [0] * (m + 1)  # owner[col] = row assigned to col (0 = none)
    way = [0] * (m + 1)
    for row in range(1, n + 1):
        owner[0] = row
        col0 = 0
        minv: list[int | None] = [None] * (m + 1)
        used = [False] * (m + 1)
        while True:
            used[col0] = True
            row0 = owner[col0]
            delta: int | None = None
            col1 = 0
            for col in range(1, m + 1):
                if used[col]:
                    continue
                current = cost[row0 - 1][col - 1] - u[row0] - v[col]
                best = minv[col]
                if best is None or current < best:
                    minv[col] = current
                    way[col] = col0
                    best = current
                if delta is None or best < delta:
                    delta = best
                    col1 = col
            assert delta is not None  # n <= m, so an unused column always exists
            for col in range(m + 1):
                if used[col]:
                    u[owner[col]] += delta
                    v[col] -= delta
                else:
                    col_min = minv[col]
                    if col_min is not None:
                        minv[col] = col_min - delta
            col0 = col1
            if owner[col0] == 0:
                break
        while col0:
            col1 = way[col0]
            owner[col0] = owner[col1]
            col0 = col1
    pairs = [(owner[col] - 1, col - 1) for col in range(1, m + 1) if owner[col]]
    return sorted((c, r) for r, c in pairs) if transposed else sorted(pairs)


def declared_required_params(invocations: Iterable[Invocation | None]) -> dict[str, frozenset[str]]:
    """Tool name -> the parameters its declaration marks required, from the first invocation with ``app_details``.

    Reads genai ``Tool`` declarations given as objects or JSON (snake_case or camelCase): ``function_declarations[*]``
    with ``parameters.required`` or ``parameters_json_schema.required``. Tools without a declaration are absent.
    """
    for invocation in invocations:
        if invocation is None or invocation.app_details is None:
            continue
        found: dict[str, frozenset[str]] = {}
        for agent in invocation.app_details.agent_details.values():
            for tool in agent.tool_declarations:
                for declaration in _function_declarations(_as_mapping(tool)):
                    name = declaration.get("name")
                    if isinstance(name, str):
                        found[name] = _required_of(declaration)
        if found:
            return found
    return {}


def _as_mapping(value: Any) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        dumped = dump(exclude_none=True)
        if isinstance(dumped, Mapping):
            return dumped
    return {}


def _get(mapping: Mapping[str, Any], snake: str, camel: str) -> Any:
    value = mapping.get(snake)
    return mapping.get(camel) if value is None else value


def _function_declarations(tool: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    declarations = _get(tool, "function_declarations", "functionDeclarations")
    if isinstance(declarations, list):
        return [_as_mapping(d) for d in declarations]
    return [tool] if "name" in tool else []


def _required_of(declaration: Mapping[str, Any]) -> frozenset[str]:
    required: set[str] = set()
    for schema in (declaration.get("parameters"), _get(declaration, "parameters_json_schema", "parametersJsonSchema")):
        names = _as_mapping(schema).get("required")
        if isinstance(names, list):
            required.update(name for name in names if isinstance(name, str))
    return frozenset(required)
