"""MkDocs hook: pages that show the repository's shipped files (deploy/, the Prometheus rules, the Collector
configurations) as they are, read at build time, so the site cannot drift from them.

A page holds a marker alone on a line:

- ``<!-- shipped: PATH -->``: a file (YAML, env, ...) becomes a fenced code block titled with its path;
- ``<!-- shipped-readme: PATH -->``: a README's Markdown is inlined, its headings moved one level down, its links to
  files outside the site turned into their text (the file itself is shown on the page, or named).

PATH is relative to the repository's root; a path that does not exist fails the build (the hook raises).
``tests/test_readme.py`` imports this file to check every marker resolves.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^<!-- (shipped|shipped-readme): ([\w./-]+) -->$", re.MULTILINE)
_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^(#{1,5}) ", re.MULTILINE)
_FENCE_LANGUAGE = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".env": "sh", ".sh": "sh", ".toml": "toml"}


def _code_block(path: str) -> str:
    text = (REPO / path).read_text(encoding="utf-8").rstrip("\n")
    language = _FENCE_LANGUAGE.get(Path(path).suffix, "text")
    fence = "````" if "```" in text else "```"
    return f'{fence}{language} title="{path}"\n{text}\n{fence}'


def _readme(path: str) -> str:
    text = (REPO / path).read_text(encoding="utf-8")
    text = _LINK.sub(lambda m: m.group(0) if m.group(2).startswith(("http://", "https://")) else m.group(1), text)
    return _HEADING.sub(lambda m: f"#{m.group(1)} ", text)


def render(markdown: str) -> str:
    """``markdown`` with every shipped-file marker replaced by the file."""

    def replace(match: re.Match[str]) -> str:
        kind, path = match.groups()
        if not (REPO / path).is_file():
            raise FileNotFoundError(f"docs: {match.group(0)} names {path}, which is not a file of the repository")
        return _code_block(path) if kind == "shipped" else _readme(path)

    return MARKER.sub(replace, markdown)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """MkDocs' hook: each page's Markdown before it is rendered."""
    return render(markdown)
