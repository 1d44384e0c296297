"""MkDocs hook: the reference tables of the documentation, generated from the code at build time.

A page holds a marker, ``<!-- generated: NAME -->`` alone on a line, followed by the table ``NAME`` renders
(:data:`TABLES`) and ``<!-- end generated: NAME -->``. The tables are committed, so a page read on GitHub shows
them too; ``make docs-tables`` (this file run as a script) writes them again, the build renders them afresh, and a
test fails when a committed one differs from the code's. Each table reads one source, so neither the site nor the
pages can disagree with the code:

- ``environment-variables``: every ``OTEL_EVAL_*`` constant of :mod:`otel_eval.environment_variables` with its
  docstring;
- ``metrics``: the default metric registry (:func:`otel_eval.metrics.default_registry`, as ``otel-eval
  list-metrics`` shows it);
- ``telemetry-names``: every name of :mod:`otel_eval.semconv` with the comment or docstring beside it, under the
  module's ``# --- section ---`` headings.

The tests (``tests/test_docs.py``) import this file to check the tables and the markers.
"""

from __future__ import annotations

import ast
import inspect
import io
import re
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)
_BLOCK = re.compile(
    r"^<!-- generated: (?P<name>[a-z-]+) -->\n(?:(?:.*\n)*?<!-- end generated: (?P=name) -->$)?", re.MULTILINE
)
"""A marker and what follows it up to its end marker (none yet: the marker alone)."""


def _markdown(text: str) -> str:
    """Docstring text as one table cell: reST ``literals`` as Markdown code, one line, pipes escaped."""
    text = re.sub(r"``(.+?)``", r"`\1`", " ".join(text.split()))
    text = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", text)
    return text.replace("|", "\\|")


def _docstrings(module: ModuleType) -> dict[str, str]:
    """The docstring (a string literal right after the assignment) of each module-level name of ``module``."""
    tree = ast.parse(inspect.getsource(module))
    found: dict[str, str] = {}
    for statement, following in zip(tree.body, tree.body[1:], strict=False):
        target = statement.target if isinstance(statement, ast.AnnAssign) else None
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
        if (
            isinstance(target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            found[target.id] = inspect.cleandoc(following.value.value)
    return found


def environment_variables_table() -> str:
    """Every ``OTEL_EVAL_*`` variable and its docstring, in the module's order."""
    from otel_eval import environment_variables

    docstrings = _docstrings(environment_variables)
    rows = ["| variable | meaning |", "|---|---|"]
    for name, value in vars(environment_variables).items():
        if not name.startswith(environment_variables.ENV_PREFIX):
            continue
        if name not in docstrings:
            raise ValueError(f"otel_eval/environment_variables.py: {name} has no docstring")
        rows.append(f"| `{value}` | {_markdown(docstrings[name])} |")
    return "\n".join(rows)


def metrics_table() -> str:
    """Every metric of the default registry: range, default threshold, whether it needs a reference and a judge, what
    it measures."""
    from otel_eval.metrics import default_registry

    rows = ["| metric | range | threshold | reference | judge | what it measures |", "|---|---|---|---|---|---|"]
    for info in default_registry().infos():
        reference = "yes" if info.requires_reference else "no"
        judge = "yes" if info.requires_judge else "no"
        threshold = "—" if info.informational else f"{info.default_threshold:g}" if info.default_threshold else "needed"
        rows.append(
            f"| `{info.name}` | {info.value_range} | {threshold} | {reference} | {judge} | {_markdown(info.description)} |"
        )
    return "\n".join(rows)


@dataclass
class _Group:
    """Names of otel_eval/semconv.py under one comment paragraph (or none)."""

    note: str = ""
    rows: list[tuple[str, str, str]] = field(default_factory=list)  # (value, constant, comment)


@dataclass
class _Section:
    title: str
    groups: list[_Group] = field(default_factory=list)


def _comments(source: str) -> dict[int, str]:
    """Each comment of ``source`` by line number, without its ``#``."""
    return {
        token.start[0]: token.string.lstrip("#").strip()
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    }


def _semconv_sections() -> Iterator[_Section]:
    from otel_eval import semconv

    source = inspect.getsource(semconv)
    lines = source.splitlines()
    comments = _comments(source)
    docstrings = _docstrings(semconv)
    section = _Section("")
    group = _Group()
    consumed = 0  # comment lines up to here are already placed
    for statement in ast.parse(source).body:
        if not isinstance(statement, ast.AnnAssign | ast.Assign):
            continue
        target = statement.target if isinstance(statement, ast.AnnAssign) else statement.targets[0]
        assert isinstance(target, ast.Name)
        value = statement.value
        # The comments above this statement (since the last one): a section heading and/or a paragraph.
        paragraph: list[str] = []
        for number in range(consumed + 1, statement.lineno):
            comment = comments.get(number)
            if comment is None or not lines[number - 1].lstrip().startswith("#"):
                continue
            if comment.startswith("---"):
                if group.rows or group.note:
                    section.groups.append(group)
                if section.groups:
                    yield section
                section, group, paragraph = _Section(comment.strip("- ")), _Group(), []
            else:
                paragraph.append(comment)
        if paragraph:
            if group.rows or group.note:
                section.groups.append(group)
            group = _Group(note=" ".join(paragraph))
        end = statement.end_lineno or statement.lineno
        consumed = end
        trailing = " ".join(comments[n] for n in range(statement.lineno, end + 1) if n in comments)
        note = " ".join(part for part in (trailing, docstrings.get(target.id, "")) if part)
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            group.rows.append((f"`{value.value}`", target.id, note))
        elif isinstance(value, ast.Tuple) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
        ):
            names = ", ".join(f"`{e.value}`" for e in value.elts if isinstance(e, ast.Constant))
            group.rows.append((names, target.id, note))
    if group.rows or group.note:
        section.groups.append(group)
    if section.groups:
        yield section


def telemetry_names_table() -> str:
    """Every name of otel_eval/semconv.py (string constants and tuples of strings), by the module's sections."""
    parts: list[str] = []
    for section in _semconv_sections():
        parts.append(f"### {section.title[0].upper()}{section.title[1:]}" if section.title else "")
        for group in section.groups:
            if group.note:
                parts.append(_markdown(group.note))
            if group.rows:
                rows = ["| value | constant | note |", "|---|---|---|"]
                rows += [f"| {names} | `{constant}` | {_markdown(note)} |" for names, constant, note in group.rows]
                parts.append("\n".join(rows))
    return "\n\n".join(part for part in parts if part)


TABLES: dict[str, Callable[[], str]] = {
    "environment-variables": environment_variables_table,
    "metrics": metrics_table,
    "telemetry-names": telemetry_names_table,
}


def render(markdown: str) -> str:
    """``markdown`` with the table after every marker written afresh, up to its end marker; an unknown marker name
    raises ``KeyError``."""

    def table(match: re.Match[str]) -> str:
        name = match.group("name")
        return f"<!-- generated: {name} -->\n{TABLES[name]()}\n<!-- end generated: {name} -->"

    return _BLOCK.sub(table, markdown)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """The MkDocs event: each page's Markdown, before it is rendered."""
    return render(markdown)


def main() -> None:
    """Writes every page's tables again (``make docs-tables``), naming the pages that changed."""
    from pathlib import Path

    for page in sorted((Path(__file__).resolve().parents[1]).glob("*.md")):
        text = page.read_text(encoding="utf-8")
        rendered = render(text)
        if rendered != text:
            page.write_text(rendered, encoding="utf-8")
            print(f"wrote {page.name}")


if __name__ == "__main__":
    main()
