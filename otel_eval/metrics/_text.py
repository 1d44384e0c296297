"""ROUGE-1 with ADK 2.13's Unicode-aware tokenisation, computed by rouge-score.

ADK 2.13 (``final_response_match_v1._UnicodeAwareTokenizer``) tokenises as follows, and so does
:class:`UnicodeAwareTokenizer`:

1. NFKC-normalise, then lowercase the whole text.
2. Per character: CJK ideographs, Hiragana, Katakana and Hangul syllables become one-character words; in Thai, Lao,
   Khmer and Myanmar a combining mark (Unicode category ``M*``) sticks to the preceding character and any other
   character starts a new word (grapheme-cluster words); other alphanumerics and combining marks are word
   characters; everything else separates words.
3. Words made only of ASCII go through rouge-score's ``DefaultTokenizer(use_stemmer=True)`` (Porter stemming of
   words longer than 3 characters); other words are kept unstemmed.

ADK builds a new ``RougeScorer`` (and Porter stemmer) for every invocation and stems every word again; here one scorer
is shared and each distinct ASCII word is stemmed once (bounded cache), which gives the same tokens much faster.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from typing import Any

from rouge_score import rouge_scorer, tokenizers

_CJK, _NON_SPACED_MARK, _NON_SPACED_BASE, _WORD, _SEPARATOR = range(5)
_ASCII_WORD = re.compile(r"[a-z0-9]+")


def _is_cjk(code: int) -> bool:
    return (
        0x4E00 <= code <= 0x9FFF  # CJK Unified Ideographs
        or 0x3040 <= code <= 0x309F  # Hiragana
        or 0x30A0 <= code <= 0x30FF  # Katakana
        or 0xAC00 <= code <= 0xD7AF  # Hangul Syllables
    )


def _is_non_spaced_script(code: int) -> bool:
    return (
        0x0E00 <= code <= 0x0E7F  # Thai
        or 0x0E80 <= code <= 0x0EFF  # Lao
        or 0x1780 <= code <= 0x17FF  # Khmer
        or 0x1000 <= code <= 0x109F  # Myanmar
    )


@functools.lru_cache(maxsize=8192)
def _char_class(char: str) -> int:
    code = ord(char)
    if _is_cjk(code):
        return _CJK
    is_mark = unicodedata.category(char).startswith("M")
    if _is_non_spaced_script(code):
        return _NON_SPACED_MARK if is_mark else _NON_SPACED_BASE
    # Combining marks (e.g. Devanagari matras) stay attached to their base character.
    return _WORD if char.isalnum() or is_mark else _SEPARATOR


class UnicodeAwareTokenizer:
    """The tokeniser of ADK 2.13's ``response_match_score`` (see the module docstring), with stemming."""

    def __init__(self, *, cache_size: int = 65536) -> None:
        self._default = tokenizers.DefaultTokenizer(use_stemmer=True)
        self._ascii_word_tokens = functools.lru_cache(maxsize=cache_size)(self._stem_ascii_word)

    def _stem_ascii_word(self, word: str) -> tuple[str, ...]:
        return tuple(self._default.tokenize(word))

    def clear_cache(self) -> None:
        """Forgets the stemmed words (benchmarks call this to time a cold start)."""
        self._ascii_word_tokens.cache_clear()

    def tokenize(self, text: str) -> list[str]:
        """The tokens of ``text`` exactly as ADK 2.13's ``_UnicodeAwareTokenizer(use_stemmer=True)`` makes them."""
        text = unicodedata.normalize("NFKC", text).lower()
        words = _ASCII_WORD.findall(text) if text.isascii() else _split_words(text)
        tokens: list[str] = []
        for word in words:
            if word.isascii():
                tokens.extend(self._ascii_word_tokens(word))
            else:
                tokens.append(word)
        return tokens


def _split_words(text: str) -> list[str]:
    pieces: list[str] = []
    for char in text:
        kind = _char_class(char)
        if kind in (_WORD, _NON_SPACED_MARK):
            pieces.append(char)
        elif kind == _CJK:
            pieces.append(f" {char} ")
        elif kind == _NON_SPACED_BASE:
            pieces.append(f" {char}")
        else:
            pieces.append(" ")
    return "".join(pieces).split()


_scorer: Any = None
_tokenizer: UnicodeAwareTokenizer | None = None
_lock = threading.Lock()


def _shared_scorer() -> tuple[Any, UnicodeAwareTokenizer]:
    global _scorer, _tokenizer
    if _scorer is None or _tokenizer is None:
        with _lock:
            if _scorer is None or _tokenizer is None:
                _tokenizer = UnicodeAwareTokenizer()
                _scorer = rouge_scorer.RougeScorer(["rouge1"], tokenizer=_tokenizer)
    return _scorer, _tokenizer


def rouge1_fmeasure(candidate: str, reference: str) -> float:
    """ROUGE-1 F-measure of ``candidate`` against ``reference``; 0.0 when either has no tokens (as ADK)."""
    scorer, _ = _shared_scorer()
    return float(scorer.score(reference, candidate)["rouge1"].fmeasure)


def clear_caches() -> None:
    """Empties the stemming cache of the shared scorer."""
    _, tokenizer = _shared_scorer()
    tokenizer.clear_cache()
