"""The commands' shared JSON writer."""

from __future__ import annotations

import contextlib
import io
import json
import math

import pytest

from otel_eval.cli._common import print_json


def test_print_json_writes_indented_json_with_nan_and_falls_back_for_what_utf8_cannot_encode(
    capsys: pytest.CaptureFixture[str],
) -> None:
    print_json({"score": 0.6464646464646465, "none": None, "nan": math.nan, "list": [1, "é"]})
    out = capsys.readouterr().out
    assert out.startswith('{\n  "score": 0.6464646464646465,\n')
    payload = json.loads(out)  # Python's reader accepts NaN, as json.dumps writes it
    assert math.isnan(payload["nan"]) and payload["list"] == [1, "é"] and payload["none"] is None

    written = io.StringIO()  # a text stream that takes any str (the terminal's encoder may refuse a surrogate)
    with contextlib.redirect_stdout(written):
        print_json({"text": "lone \udc80 surrogate"})  # pydantic-core refuses it; json.dumps writes it as before
    assert json.loads(written.getvalue()) == {"text": "lone \udc80 surrogate"}
