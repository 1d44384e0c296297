"""A small PromQL reader: which metric names, label names and label matchers an expression uses.

Not a full parser (promtool checks the syntax); a tokenizer that knows where identifiers mean metric names:
outside ``{...}`` label matchers, outside ``[...]`` ranges, outside the label lists of ``by``/``without``/
``on``/``ignoring``/``group_left``/``group_right``, not followed by ``(`` (functions, aggregations), not a keyword
and not an aggregation followed by its ``by``/``without``. Grafana's ``$__rate_interval``-style variables are
replaced by a duration first (:func:`expand_grafana`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

KEYWORDS = frozenset(
    {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool"}
    | {"inf", "nan", "atan2", "start", "end"}
)
AGGREGATIONS = frozenset(
    {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk", "quantile"}
    | {"limitk", "limit_ratio"}
)
LABEL_LIST_KEYWORDS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+|\#[^\n]*)
  | (?P<string>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`)
  | (?P<number>0[xX][0-9a-fA-F]+|(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?(?:ms|[smhdwy])?(?:\d+(?:ms|[smhdwy]))*)
  | (?P<ident>[a-zA-Z_:][a-zA-Z0-9_:]*)
  | (?P<op>=~|!~|!=|==|<=|>=|[-+*/%^<>=(){}\[\],:@])
    """,
    re.VERBOSE,
)


class PromQLSyntaxError(ValueError):
    """The expression has a character the tokenizer does not know."""


@dataclass(frozen=True)
class Matcher:
    """One label matcher inside ``{...}``: ``label op "value"``."""

    label: str
    op: str
    value: str


@dataclass
class Selectors:
    """What an expression refers to."""

    metric_names: set[str] = field(default_factory=set)
    label_names: set[str] = field(default_factory=set)
    matchers: list[Matcher] = field(default_factory=list)


def expand_grafana(expr: str, duration: str = "5m") -> str:
    """Replaces Grafana's interval variables by ``duration`` and any other ``$var``/``${var}`` by ``var_<name>``."""
    expr = re.sub(r"\$\{?__(?:rate_interval|interval|range)\}?(?:_ms|_s)?", duration, expr)
    return re.sub(r"\$\{?([a-zA-Z_][a-zA-Z0-9_]*)(?::[a-z]+)?\}?", "var_\\1", expr)


def _tokens(expr: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    position = 0
    while position < len(expr):
        match = _TOKEN.match(expr, position)
        if match is None:
            raise PromQLSyntaxError(f"unexpected {expr[position]!r} at {position} in {expr!r}")
        kind = match.lastgroup
        assert kind is not None
        if kind != "ws":
            tokens.append((kind, match.group()))
        position = match.end()
    return tokens


def _unquote(literal: str) -> str:
    if literal.startswith("`"):
        return literal[1:-1]
    return bytes(literal[1:-1], "utf-8").decode("unicode_escape")


def selectors(expr: str) -> Selectors:
    """The metric names, label names and label matchers ``expr`` uses.

    Raises:
        PromQLSyntaxError: a character no PromQL token starts with.
    """
    result = Selectors()
    tokens = _tokens(expr)
    index = 0
    while index < len(tokens):
        kind, text = tokens[index]
        following = tokens[index + 1][1] if index + 1 < len(tokens) else ""
        if text == "{":
            index = _read_matchers(tokens, index + 1, result)
            continue
        if text == "[":
            while index < len(tokens) and tokens[index][1] != "]":
                index += 1
        elif kind == "ident" and text.lower() in LABEL_LIST_KEYWORDS and following == "(":
            index += 2
            while index < len(tokens) and tokens[index][1] != ")":
                if tokens[index][0] == "ident":
                    result.label_names.add(tokens[index][1])
                index += 1
        elif (
            kind == "ident"
            and text.lower() not in KEYWORDS
            and following != "("
            and not _is_aggregation(text, following)
        ):
            result.metric_names.add(text)
        index += 1
    return result


def _is_aggregation(text: str, following: str) -> bool:
    """``sum by (job) (...)``: an aggregation whose grouping comes first."""
    return text.lower() in AGGREGATIONS and following.lower() in ("by", "without")


def _read_matchers(tokens: list[tuple[str, str]], index: int, result: Selectors) -> int:
    """Reads ``label op "value", ...`` up to ``}``; returns the index after it."""
    while index < len(tokens) and tokens[index][1] != "}":
        kind, text = tokens[index]
        if kind == "ident" and index + 2 < len(tokens) and tokens[index + 2][0] == "string":
            op, value = tokens[index + 1][1], _unquote(tokens[index + 2][1])
            if text == "__name__":
                if op != "=":
                    raise PromQLSyntaxError(f"__name__{op}{value!r}: name patterns cannot be checked")
                result.metric_names.add(value)
            else:
                result.label_names.add(text)
                result.matchers.append(Matcher(text, op, value))
            index += 3
        else:
            index += 1
    return index + 1


def matched_values(matcher: Matcher) -> list[str]:
    """The label values a matcher names: the value of ``=``/``!=``, the alternatives of a ``a|b`` regex."""
    if matcher.op in ("=", "!="):
        return [matcher.value]
    if re.fullmatch(r"[a-zA-Z0-9_.\-]+(?:\|[a-zA-Z0-9_.\-]+)*", matcher.value):
        return matcher.value.split("|")
    return []
