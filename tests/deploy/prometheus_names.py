"""The Prometheus names of the metrics otel-eval emits, derived from ``otel_eval/semconv.py`` — never hand-listed.

How a name is derived:

1. Every ``METRIC_*`` constant of :mod:`otel_eval.semconv` is an instrument name.
2. Its kind and unit are read from the code that creates it: a ``meter.create_<kind>(semconv.METRIC_X, unit=...)``
   call anywhere under ``otel_eval/`` (found with :mod:`ast`, so nothing has to run). A constant that no code
   creates yet takes kind and unit from its comment in ``semconv.py`` (``histogram`` or a ``prom: ..._bucket``
   name, ``gauge``, unit ``s;``; otherwise a counter without unit), and is marked ``from_code=False``.
3. :func:`prometheus_metric_name` applies the OTLP -> Prometheus translation that Prometheus' OTLP receiver and the
   Collector's Prometheus exporters use by default (``UnderscoreEscapingWithSuffixes``, prometheus/otlptranslator):

   * every character outside ``[a-zA-Z0-9_:]`` becomes ``_``, runs of ``_`` collapse, a leading digit gets ``_``;
   * the unit is appended as a word (``s`` -> ``seconds``, ``By`` -> ``bytes``, ``m/s`` -> ``meters_per_second``);
     ``{...}`` annotations are dropped, so ``{result}`` adds nothing; ``1`` adds ``ratio`` to gauges only; a unit
     word the name already contains is not repeated;
   * monotonic counters end in ``_total``;
   * a histogram is the series ``<name>_bucket``, ``<name>_sum`` and ``<name>_count``.

4. Attribute keys become label names by the same character rule (:func:`prometheus_label_name`):
   ``gen_ai.evaluation.name`` -> ``gen_ai_evaluation_name``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from otel_eval import semconv

PACKAGE_DIR = Path(semconv.__file__).parent
SEMCONV_SOURCE = Path(semconv.__file__)

Kind = Literal["counter", "gauge", "histogram"]

_CREATE_KIND: dict[str, Kind] = {
    "create_counter": "counter",
    "create_observable_counter": "counter",
    "create_up_down_counter": "gauge",  # a non-monotonic sum is a Prometheus gauge
    "create_observable_up_down_counter": "gauge",
    "create_gauge": "gauge",
    "create_observable_gauge": "gauge",
    "create_histogram": "histogram",
}

_OWN_COUNTERS: dict[str, tuple[Kind, int, int]] = {
    "SeriesCounts": ("counter", 1, 2),  # otel_eval.instruments.SeriesCounts(meter_provider, name, unit, description)
    "_observed_counter": ("counter", 0, 1),  # InstrumentHolder._observed_counter(name, unit, description, key)
}
"""otel-eval's own helpers that make an observable counter: their positional (name, unit) arguments."""

_UNIT_WORDS = {
    "d": "days",
    "h": "hours",
    "min": "minutes",
    "s": "seconds",
    "ms": "milliseconds",
    "us": "microseconds",
    "ns": "nanoseconds",
    "By": "bytes",
    "KiBy": "kibibytes",
    "MiBy": "mebibytes",
    "GiBy": "gibibytes",
    "TiBy": "tibibytes",
    "KBy": "kilobytes",
    "MBy": "megabytes",
    "GBy": "gigabytes",
    "TBy": "terabytes",
    "m": "meters",
    "V": "volts",
    "A": "amperes",
    "J": "joules",
    "W": "watts",
    "g": "grams",
    "Cel": "celsius",
    "Hz": "hertz",
    "%": "percent",
}
_PER_UNIT_WORDS = {"s": "second", "m": "minute", "h": "hour", "d": "day", "w": "week", "mo": "month", "y": "year"}


@dataclass(frozen=True)
class InstrumentSpec:
    """One emitted instrument: its OTel name, kind and unit, and where kind and unit were read from."""

    constant: str
    name: str
    kind: Kind
    unit: str
    from_code: bool


def _words(text: str) -> list[str]:
    return [word for word in re.split(r"[^a-zA-Z0-9:]+", text) if word]


def prometheus_label_name(attribute_key: str) -> str:
    """``gen_ai.evaluation.score.label`` -> ``gen_ai_evaluation_score_label``."""
    name = re.sub(r"_+", "_", re.sub(r"[^a-zA-Z0-9_]", "_", attribute_key))
    return f"key_{name}" if name[:1].isdigit() else name


def _unit_words(unit: str, kind: Kind) -> list[str]:
    unit = re.sub(r"\{[^}]*\}", "", unit).strip()
    if unit == "1":
        return ["ratio"] if kind == "gauge" else []
    if not unit:
        return []
    main, _, per = unit.partition("/")
    words = _words(_UNIT_WORDS.get(main, main)) if main else []
    if per:
        words += ["per", *_words(_PER_UNIT_WORDS.get(per, per))]
    return words


def prometheus_metric_name(name: str, unit: str, kind: Kind) -> str:
    """The Prometheus base name of an OTel instrument (without ``_bucket``/``_sum``/``_count`` for histograms)."""
    words = _words(name)
    words += [word for word in _unit_words(unit, kind) if word not in words]
    if kind == "counter" and words[-1:] != ["total"]:
        words.append("total")
    result = "_".join(words)
    return f"_{result}" if result[:1].isdigit() else result


def prometheus_series_names(name: str, unit: str, kind: Kind) -> set[str]:
    """Every Prometheus series name one instrument produces."""
    base = prometheus_metric_name(name, unit, kind)
    if kind == "histogram":
        return {f"{base}_bucket", f"{base}_sum", f"{base}_count"}
    return {base}


def metric_constants() -> dict[str, str]:
    """``METRIC_*`` constant name -> instrument name, from :mod:`otel_eval.semconv`."""
    return {key: value for key, value in vars(semconv).items() if key.startswith("METRIC_") and isinstance(value, str)}


def _semconv_comments() -> dict[str, str]:
    """``METRIC_*`` constant -> the comment text on the lines of its assignment in ``semconv.py``."""
    source = SEMCONV_SOURCE.read_text(encoding="utf-8")
    lines = source.splitlines()
    comments: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
            if isinstance(target, ast.Name) and target.id.startswith("METRIC_"):
                text = "\n".join(lines[node.lineno - 1 : (node.end_lineno or node.lineno)])
                comments[target.id] = " ".join(part.split("#", 1)[1] for part in text.splitlines() if "#" in part)
    return comments


def documented_prometheus_names() -> dict[str, str]:
    """``METRIC_*`` constant -> the Prometheus name its comment in ``semconv.py`` gives (when spelled out in full)."""
    documented: dict[str, str] = {}
    for constant, comment in _semconv_comments().items():
        match = re.search(r"prom:\s*([a-zA-Z_:][a-zA-Z0-9_:]*)", comment)
        if match:
            documented[constant] = match.group(1)
    return documented


def _created_instruments() -> dict[str, list[tuple[Kind, str, Path]]]:
    """``METRIC_*`` constant -> (kind, unit, module) of every ``create_*`` call (or own counter helper, ``_OWN_COUNTERS``)
    naming it under ``otel_eval/``."""
    created: dict[str, list[tuple[Kind, str, Path]]] = {}
    for module in sorted(PACKAGE_DIR.rglob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            kind = _CREATE_KIND.get(func) if isinstance(func, str) else None
            helper = _OWN_COUNTERS.get(func) if isinstance(func, str) else None
            if helper is not None:
                kind, name_at, unit_at = helper
                name_node = node.args[name_at] if len(node.args) > name_at else None
                unit_node = node.args[unit_at] if len(node.args) > unit_at else None
            else:
                name_node = (
                    node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "name"), None)
                )
                unit_node = next((k.value for k in node.keywords if k.arg == "unit"), None)
            if kind is None or name_node is None:
                continue
            constant = name_node.attr if isinstance(name_node, ast.Attribute) else getattr(name_node, "id", None)
            if not (isinstance(constant, str) and constant.startswith("METRIC_")):
                continue
            unit = unit_node.value if isinstance(unit_node, ast.Constant) and isinstance(unit_node.value, str) else ""
            created.setdefault(constant, []).append((kind, unit, module))
    return created


def _spec_from_comment(comment: str) -> tuple[Kind, str]:
    kind: Kind = "counter"
    if "histogram" in comment or re.search(r"prom:\s*\S+_bucket\b", comment):
        kind = "histogram"
    elif "gauge" in comment:
        kind = "gauge"
    unit = "s" if re.search(r"(?:^|\s)s;", comment) else ""
    return kind, unit


def instrument_specs() -> dict[str, InstrumentSpec]:
    """Every ``METRIC_*`` constant's instrument, kind and unit from the code that creates it (else its comment)."""
    created = _created_instruments()
    comments = _semconv_comments()
    specs: dict[str, InstrumentSpec] = {}
    for constant, name in metric_constants().items():
        if constant in created:
            kind, unit, _ = created[constant][0]
            specs[constant] = InstrumentSpec(constant, name, kind, unit, from_code=True)
        else:
            kind, unit = _spec_from_comment(comments.get(constant, ""))
            specs[constant] = InstrumentSpec(constant, name, kind, unit, from_code=False)
    return specs


def creation_sites() -> dict[str, list[tuple[Kind, str, Path]]]:
    """Every ``create_*`` call of a ``METRIC_*`` constant (to check that all agree on kind and unit)."""
    return _created_instruments()


def emitted_prometheus_names() -> set[str]:
    """Every Prometheus series name otel-eval emits."""
    names: set[str] = set()
    for spec in instrument_specs().values():
        names |= prometheus_series_names(spec.name, spec.unit, spec.kind)
    return names


def emitted_label_names() -> set[str]:
    """Label names an otel-eval series can carry: every attribute key in ``semconv`` translated, plus the labels
    Prometheus adds itself (``job``/``instance`` from service.name/service.instance.id, ``le`` of buckets)."""
    keys = {
        value
        for key, value in vars(semconv).items()
        if key.isupper()
        and not key.startswith("METRIC_")
        and "EVENT" not in key
        and isinstance(value, str)
        and re.fullmatch(r"[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)+", value)
    }
    return {prometheus_label_name(key) for key in keys} | {"job", "instance", "le"}
