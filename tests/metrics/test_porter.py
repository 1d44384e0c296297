"""nltk's Porter stemmer loaded on its own: the same stems as ``nltk.stem.porter.PorterStemmer``, and no trace in
``sys.modules`` (a later ``import nltk`` is the real one)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.stem.porter import PorterStemmer
from rouge_score import rouge_scorer

from otel_eval.metrics._porter import _IsolatedNltk, porter_stemmer

ROOT = Path(__file__).resolve().parents[2]
IRREGULAR = ["dying", "lying", "tying", "skies", "news", "innings", "outing", "canning", "howe", "proceed", "exceed"]
SUFFIXES = ["generously", "conditional", "relational", "hopping", "agreed", "feed", "sensibility", "electrical"]


def vocabulary() -> list[str]:
    """Every distinct lowercase ASCII word of this repository's README, documentation and sample traces."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    for path in sorted((ROOT / "docs").glob("*.md")):
        text += path.read_text(encoding="utf-8")
    for path in sorted((ROOT / "tests" / "data" / "traces").rglob("*.json")):
        text += path.read_text(encoding="utf-8", errors="replace")
    return sorted(set(re.findall(r"[a-z0-9]+", text.lower())))


def isolated_stemmer() -> Any:
    return _IsolatedNltk.find().module("nltk.stem.porter").PorterStemmer()


STEMMER, REAL = isolated_stemmer(), PorterStemmer()


def test_stems_equal_nltks_on_a_real_vocabulary() -> None:
    words = vocabulary() + IRREGULAR + SUFFIXES
    assert len(words) > 2000
    assert [STEMMER.stem(w) for w in words] == [REAL.stem(w) for w in words]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=14))
def test_stems_equal_nltks_on_generated_words(word: str) -> None:
    assert STEMMER.stem(word) == REAL.stem(word)


@pytest.mark.integration
def test_scoring_leaves_no_nltk_module_behind_and_nltk_still_imports() -> None:
    code = (
        "import json, sys\n"
        "from otel_eval.metrics._text import rouge1_fmeasure\n"
        "score = rouge1_fmeasure('the dogs were running quickly', 'a dog runs quick')\n"
        "left = sorted(m for m in sys.modules if m == 'nltk' or m.startswith('nltk.'))\n"
        "import nltk.stem.porter\n"
        "real = nltk.stem.porter.PorterStemmer().stem('running')\n"
        "print(json.dumps([score, left, real]))\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    score, left, real = json.loads(completed.stdout)
    assert left == []
    assert real == "run"
    expected = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True).score(
        "a dog runs quick", "the dogs were running quickly"
    )
    assert score == expected["rouge1"].fmeasure == 2 * (2 / 5) * (2 / 4) / (2 / 5 + 2 / 4)  # dog and run shared


def test_a_stemmer_needing_nltks_package_init_fails_loudly_so_the_normal_import_is_used(tmp_path: Path) -> None:
    stem = tmp_path / "nltk" / "stem"
    stem.mkdir(parents=True)
    (stem / "porter.py").write_text("from nltk import defined_only_in_package_init\n")
    with pytest.raises(ImportError):
        _IsolatedNltk(tmp_path / "nltk").module("nltk.stem.porter")


def test_porter_stemmer_is_the_nltk_extensions_mode() -> None:
    assert porter_stemmer().mode == PorterStemmer().mode == PorterStemmer.NLTK_EXTENSIONS
