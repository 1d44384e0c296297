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

ADK builds a new ``RougeScorer`` (and Porter stemmer) for every invocation and stems every word again; here one
tokenizer is shared, each distinct ASCII word is stemmed once and each distinct character classified once (bounded
caches), and unigrams are counted in C, which gives the same score much faster.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import Any

from rouge_score import tokenize as rouge_tokenize

from otel_eval.metrics._porter import porter_stemmer

_ASCII_WORD = re.compile(r"[a-z0-9]+")
_CACHE_LIMIT = 65536
"""Entries kept per cache (stemmed words, character classes); a full cache is emptied and refilled."""


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


def _piece(char: str) -> str:
    """What ADK's tokenizer turns ``char`` into before splitting on whitespace."""
    code = ord(char)
    if _is_cjk(code):
        return f" {char} "  # a word of its own
    is_mark = unicodedata.category(char).startswith("M")
    if _is_non_spaced_script(code):
        return char if is_mark else f" {char}"  # a mark joins its base character; a base starts a cluster
    # Combining marks (e.g. Devanagari matras) stay attached to their base character.
    return char if char.isalnum() or is_mark else " "


class UnicodeAwareTokenizer:
    """The tokeniser of ADK 2.13's ``response_match_score`` (see the module docstring), with stemming.

    Thread-safe: the caches are plain dicts whose entries are computed deterministically, so a race only computes an
    entry twice.
    """

    def __init__(self) -> None:
        self._stemmer: Any = None
        self._stems: dict[str, tuple[str, ...]] = {}
        self._pieces: dict[str, str] = {}

    def clear_cache(self) -> None:
        """Forgets the stemmed words and character classes (benchmarks call this to time a cold start)."""
        self._stems = {}
        self._pieces = {}

    def tokenize(self, text: str) -> list[str]:
        """The tokens of ``text`` exactly as ADK 2.13's ``_UnicodeAwareTokenizer(use_stemmer=True)`` makes them."""
        text = unicodedata.normalize("NFKC", text).lower()
        words = _ASCII_WORD.findall(text) if text.isascii() else self._split_words(text)
        stems = self._stems
        tokens: list[str] = []
        for word in words:
            if not word.isascii():
                tokens.append(word)  # non-ASCII words are kept whole and unstemmed, as ADK keeps them
                continue
            stemmed = stems.get(word)
            if stemmed is None:
                if len(stems) >= _CACHE_LIMIT:
                    stems.clear()
                stemmed = stems[word] = self._stem_word(word)
            tokens.extend(stemmed)
        return tokens

    def _stem_word(self, word: str) -> tuple[str, ...]:
        # rouge-score's DefaultTokenizer(use_stemmer=True).tokenize, with nltk's Porter stemmer loaded on its own
        # (see _porter) when a response is first scored, so that importing the metrics stays fast.
        if self._stemmer is None:
            self._stemmer = porter_stemmer()
        return tuple(rouge_tokenize.tokenize(word, self._stemmer))

    def _split_words(self, text: str) -> list[str]:
        pieces = self._pieces
        if len(pieces) >= _CACHE_LIMIT:
            pieces.clear()
        parts = []
        for char in text:
            piece = pieces.get(char)
            if piece is None:
                piece = pieces[char] = _piece(char)
            parts.append(piece)
        return "".join(parts).split()


_tokenizer = UnicodeAwareTokenizer()


def rouge1_fmeasure(candidate: str, reference: str) -> float:
    """ROUGE-1 F-measure of ``candidate`` against ``reference``; 0.0 when either has no tokens (as ADK).

    The arithmetic is rouge-score's (``rouge_scorer._score_ngrams`` on unigrams, then ``scoring.fmeasure``), on
    unigram counts taken with ``collections.Counter``.
    """
    target = Counter(_tokenizer.tokenize(reference))
    prediction = Counter(_tokenizer.tokenize(candidate))
    overlap = sum(min(count, prediction[token]) for token, count in target.items())
    precision = overlap / max(sum(prediction.values()), 1)
    recall = overlap / max(sum(target.values()), 1)
    # rouge_score.scoring.fmeasure, written out: importing that module loads numpy (~70 ms) for this one formula.
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def clear_caches() -> None:
    """Empties the tokenizer's caches."""
    _tokenizer.clear_cache()
