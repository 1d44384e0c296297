"""Linear-time scanners that answer exactly what ADK 2.13's judge-reply regexes answer.

ADK parses judge replies with regexes that backtrack on replies a judge (or whoever steers it) can write: a line
start followed by a long whitespace run is rescanned from every line start inside it (``(?m)^\\s*ID: (.*)$``:
quadratic), and a lazy ``(.*?)`` that never meets its closing text is retried from every later opening
(``<sentence>(.*?)</sentence>``, the hallucination validator's five-field block). Each function here names the regex
it answers for and returns the same matches, scanning the reply a bounded number of times. Property tests compare
them with ADK's functions and the regexes themselves.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

_WHITESPACE_RUN = re.compile(r"\s*")
_SPACE = re.compile(r"\s")


def line_fields(text: str, key: str) -> list[tuple[int, str]]:
    """``[(m.start(), m.group(1)) for m in re.finditer(rf"(?m)^\\s*{re.escape(key)}(.*)$", text)]``.

    ``key`` must start with a character that is not whitespace. ``re`` tries ``\\s*`` from every line start inside a
    run of blank lines (quadratic). The same keys are the matches of ``(?m)^[^\\S\\n]*KEY(.*)$``, whose whitespace
    stays within one line (linear); each match then starts where ``re``'s does: at the first line start, after the
    previous match, of the whitespace run before the key (found by matching that run backwards in the reversed text,
    once per match: the runs before different keys do not overlap).
    """
    if not key or key[0].isspace():
        raise ValueError("key must start with a character that is not whitespace")
    fields: list[tuple[int, str]] = []
    reversed_text = ""
    size = len(text)
    resume = 0
    for match in _key_lines(key).finditer(text):
        start = match.start()
        if start > resume and (start < 2 or _SPACE.match(text, start - 2)):  # else the line before is not blank
            if not reversed_text:
                reversed_text = text[::-1]
            run = _WHITESPACE_RUN.match(reversed_text, size - start).end() - (size - start)  # type: ignore[union-attr]
            first = max(start - run, resume)
            if first > 0 and text[first - 1] != "\n":
                first = text.find("\n", first, start) + 1
            start = first
        fields.append((start, match.group(1)))
        resume = match.end()
    return fields


@functools.lru_cache(maxsize=16)
def _key_lines(key: str) -> re.Pattern[str]:
    return re.compile(rf"(?m)^[^\S\n]*{re.escape(key)}(.*)$")


def tagged(text: str, opening: str, closing: str) -> list[str]:
    """``re.findall(f"{re.escape(opening)}(.*?){re.escape(closing)}", text, re.DOTALL)``.

    An opening with no closing after it ends the scan: no later opening has one either.
    """
    found: list[str] = []
    position = text.find(opening)
    while position >= 0:
        content_start = position + len(opening)
        end = text.find(closing, content_start)
        if end < 0:
            break
        found.append(text[content_start:end])
        position = text.find(opening, end + len(closing))
    return found


def marked_blocks(text: str, markers: Sequence[str], next_block: str) -> list[tuple[str, ...]]:
    """The groups of ``re.finditer(m0 + "(.*?)" + m1 + "(.*?)" ... + f"(.*?)(?={next_block}|\\Z)", text, DOTALL |
    IGNORECASE)`` for literal markers ``m0, m1, ...``.

    Each lazy group ends at the first following occurrence of the next marker: a later one could only leave fewer
    occurrences for the markers after it. So a block is the first ``m0``, then the first of each next marker after
    the previous one, then up to the first ``next_block`` or the end; when a marker is missing, no later block can
    have it either and the scan ends. Markers are matched case-insensitively exactly as ``re`` does (``ſ`` matches
    ``s``, ``K`` the Kelvin sign), by literal regexes, which search in linear time.
    """
    patterns = [re.compile(re.escape(marker), re.IGNORECASE) for marker in markers]
    following = re.compile(re.escape(next_block), re.IGNORECASE)
    blocks: list[tuple[str, ...]] = []
    position = 0
    while True:
        bounds: list[tuple[int, int]] = []
        for pattern in patterns:
            found = pattern.search(text, position)
            if found is None:
                return blocks
            bounds.append(found.span())
            position = found.end()
        after = following.search(text, position)
        block_end = after.start() if after else len(text)
        ends = [start for start, _ in bounds[1:]] + [block_end]
        blocks.append(tuple(text[end_of_marker:end] for (_, end_of_marker), end in zip(bounds, ends, strict=True)))
        position = block_end


def quoted_or_bracketed(text: str, key: str) -> str | None:
    """``re.search(re.escape(key) + r'\\s*:\\s*(\\[.*?\\]|".*?(?<!\\\\)")', text, re.DOTALL).group(1)``, or None.

    An opening bracket (or quote) with no closing after it fails, and so will every later one: each closing is
    searched for at most once past the last one found.
    """
    no_bracket_after = no_quote_after = len(text) + 1
    position = text.find(key)
    while position >= 0:
        colon = _WHITESPACE_RUN.match(text, position + len(key)).end()  # type: ignore[union-attr]
        if text.startswith(":", colon):
            opening = _WHITESPACE_RUN.match(text, colon + 1).end()  # type: ignore[union-attr]
            if text.startswith("[", opening) and opening < no_bracket_after:
                closing = text.find("]", opening + 1)
                if closing >= 0:
                    return text[opening : closing + 1]
                no_bracket_after = opening
            elif text.startswith('"', opening) and opening < no_quote_after:
                closing = _unescaped_quote(text, opening + 1)
                if closing >= 0:
                    return text[opening : closing + 1]
                no_quote_after = opening
        position = text.find(key, position + 1)
    return None


def _unescaped_quote(text: str, start: int) -> int:
    """The first ``"`` at or after ``start`` not preceded by a backslash, or -1."""
    position = text.find('"', start)
    while position >= 0 and text[position - 1] == "\\":
        position = text.find('"', position + 1)
    return position
