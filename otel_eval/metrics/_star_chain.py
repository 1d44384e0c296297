"""``re.search`` for one pattern shape, in linear time: a literal key, a chain of single-character-class stars, then
one character of a final class -- the shape of ADK 2.13's verdict-field regexes, e.g.
``"is_valid":\\s*\\[*[\\n\\s]*"*([^"\\]]*)"*[\\n\\s]*\\]*\\s*[,\\n\\}]``.

Python's ``re`` backtracks. Where neighbouring stars accept the same characters (the four whitespace stars above,
and the final ``\\n``), a key followed by n spaces and no closing character makes it try every way of splitting the
run between them before giving up: O(n^4) in the reply (28.6 s for 400 spaces). :class:`StarChain` gives the same
answer with regexes that cannot backtrack.

What ``re.search`` answers for this shape: the leftmost key occurrence after which the chain can match, and there,
among all successful ways to match it, the one whose star lengths, compared star by star from the first, are
greatest (each greedy star is tried longest first, and the last choice is undone first). Two facts give it directly:

* All stars from star i on, matched greedily with nothing after them (a regex that cannot fail, so never
  backtracks), reach as far as any match from star i can; the rest of the chain can succeed from star i at a position
  exactly when a character the end class accepts lies between that position and the reach (inclusive).
* Star i takes its whole run when the rest can succeed after it. Otherwise it stops at the last character in its run
  that the end class accepts (after which the end class closes at once): stopping later would leave the rest of the
  chain only the run's remaining characters, with no closing character among them, or the position after the run,
  where the rest was just found to fail.

So for each key occurrence: the greedy match of all stars, closed by the next character, is the answer when the end
class accepts that character (the usual case, a well-formed verdict); with no closing character within the reach
there is none here; else each star in turn takes its run, or stops as above. Each step is a regex match or search
that cannot backtrack more than once over the reach, and a reach cannot run past the next key occurrence's own text
for these patterns (the key's quote, letters and colon stop every star after the captured one), so the search is
linear in the reply. Equality with ``re`` is proved by a property test against ADK's own parse functions and the
regexes themselves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class StarChain:
    """``re.search(key + "".join(c + "*" for c in stars) + end, text)``, without the backtracking.

    Args:
        key: The literal the pattern starts with.
        stars: Single-character classes as regex source (``r"\\s"``, ``r'[^"\\]]'``), each repeated ``*`` greedily.
        end: The single-character class that closes the match.
        group: Index in ``stars`` of the star captured by :meth:`search`.
    """

    key: str
    stars: tuple[str, ...]
    end: str
    group: int
    _suffixes: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _runs: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _end: re.Pattern[str] = field(init=False, repr=False, compare=False)
    _last_end: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        stars = [f"({s}*)" if i == self.group else f"{s}*" for i, s in enumerate(self.stars)]
        suffixes = tuple(re.compile("".join(stars[index:])) for index in range(len(stars) + 1))
        object.__setattr__(self, "_suffixes", suffixes)
        object.__setattr__(self, "_runs", tuple(re.compile(f"{s}*") for s in self.stars))
        object.__setattr__(self, "_end", re.compile(self.end))
        object.__setattr__(self, "_last_end", re.compile(f"(?s:.*){self.end}"))

    @property
    def pattern(self) -> str:
        """The regex this chain answers for (``group`` captured as group 1)."""
        return re.escape(self.key) + self._suffixes[0].pattern + self.end

    def search(self, text: str) -> str | None:
        """``re.search(self.pattern, text).group(1)``, or None where ``re.search`` finds no match."""
        start = text.find(self.key)
        while start >= 0:
            captured = self._match_at(text, start + len(self.key))
            if captured is not None:
                return captured
            start = text.find(self.key, start + 1)
        return None

    def _match_at(self, text: str, begin: int) -> str | None:
        greedy = self._suffixes[0].match(text, begin)
        assert greedy is not None  # stars only: always matches
        reach = greedy.end()
        if self._end.match(text, reach):
            return greedy.group(1)  # the greatest path of all closes: re's answer
        if self._end.search(text, begin, reach) is None:
            return None  # nothing within reach closes: no match starts here
        position = begin
        captured = ""
        for index, run in enumerate(self._runs):
            run_end = run.match(text, position).end()  # type: ignore[union-attr]  # a star always matches
            if not self._closes(text, index + 1, run_end):
                last = self._last_end.match(text, position, run_end)
                assert last is not None  # the rest succeeded from this star: its run holds a closing character
                run_end = last.end() - 1
            if index == self.group:
                captured = text[position:run_end]
            position = run_end
        return captured

    def _closes(self, text: str, index: int, position: int) -> bool:
        """Whether stars ``index``... then the end class can match at ``position``."""
        reach = self._suffixes[index].match(text, position).end()  # type: ignore[union-attr]  # stars only
        return self._end.search(text, position, reach + 1) is not None
