"""Imports go one way, down the layer map of DESIGN.md, and a package's ``_private`` modules are its own.

Every ``import`` in ``otel_eval/`` (function-level ones included; ``if TYPE_CHECKING:`` blocks excepted, since they
never run) is parsed with :mod:`ast`. A module may import its own layer or lower ones; never a higher layer, and never
a ``_private`` module or name of another package.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "otel_eval"

LAYERS: dict[str, int] = {
    "version": 0,
    "errors": 0,
    "semconv": 0,
    "environment_variables": 0,
    "_runtime": 0,
    "instruments": 0,
    "model": 1,
    "traces": 2,
    "reconstruct": 3,
    "conversations": 3,
    "judge": 4,
    "metrics": 5,
    "emit": 6,
    "transport": 7,
    "evaluation": 8,
    "worker": 9,
    "processor": 9,
    "demo": 10,
    "cli": 10,
}
TOP = 11
"""``otel_eval/__init__.py``: the package's public face, above everything."""


@dataclass(frozen=True)
class Import:
    module: str  # dotted name of the importing module
    target: str  # dotted name imported (module, or module.name for ``from m import name``)
    line: int


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node, skipping the bodies of ``if TYPE_CHECKING:`` (iterative: no recursion limit)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                stack.extend(child.orelse)
                continue
            stack.append(child)


def imports(path: Path) -> Iterator[Import]:
    module = _module_name(path)
    is_package = path.name == "__init__.py"
    for node in _nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(module, alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                yield Import(module, f"{base}.{alias.name}", node.lineno)


def _component(dotted: str) -> str | None:
    parts = dotted.split(".")
    if parts[0] != "otel_eval":
        return None
    return parts[1] if len(parts) > 1 else "otel_eval"


def _layer(component: str) -> int:
    return TOP if component == "otel_eval" else LAYERS[component]


def violations() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for item in imports(path):
            target = _component(item.target)
            if target is None:
                continue
            source = _component(item.module)
            assert source is not None
            where = f"{path.relative_to(PACKAGE.parent)}:{item.line}: {item.module} imports {item.target}"
            if target not in LAYERS and target != "otel_eval":
                if not item.target.startswith(f"otel_eval.{target}") or target.startswith("_"):
                    found.append(f"{where}: unknown or private top-level module {target!r}")
                continue
            if _layer(target) > _layer(source):
                found.append(f"{where}: upward ({source} is layer {_layer(source)}, {target} is {_layer(target)})")
            private = [p for p in item.target.split(".")[2:] if p.startswith("_") and not p.startswith("__")]
            if private and target != source:
                found.append(f"{where}: private to {target}")
    return found


def test_every_package_has_a_layer() -> None:
    top_level = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"} | {
        p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()
    }
    assert top_level == set(LAYERS)


def test_imports_go_down_the_layers_and_private_modules_stay_private() -> None:
    found = violations()
    assert not found, "layering violations:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("source", "module", "expected"),
    [
        ("otel_eval/emit/x.py", "from otel_eval.transport.base import ExportResult", "upward"),
        ("otel_eval/judge/x.py", "def f():\n    from otel_eval.emit import Emitters", "upward"),
        ("otel_eval/worker/x.py", "from otel_eval.emit._context import invocation_context", "private to emit"),
        ("otel_eval/worker/x.py", "from otel_eval.model import _base", "private to model"),
        ("otel_eval/emit/x.py", "from ..transport import messages", "upward"),
    ],
)
def test_the_checker_catches_what_it_must(tmp_path: Path, source: str, module: str, expected: str) -> None:
    """Not vacuous: an upward import, a deferred one, a private module or name, and a relative one are caught."""
    global PACKAGE
    root = tmp_path / "otel_eval"
    for package in ("emit", "judge", "worker", "transport", "model"):
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").write_text("")
    (root / source.removeprefix("otel_eval/")).write_text(module + "\n")
    saved, PACKAGE = PACKAGE, root
    try:
        found = violations()
    finally:
        PACKAGE = saved
    assert len(found) == 1 and expected in found[0], found


def test_type_checking_imports_are_exempt(tmp_path: Path) -> None:
    path = tmp_path / "otel_eval" / "emit" / "x.py"
    path.parent.mkdir(parents=True)
    path.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from otel_eval.cli import main\n")
    global PACKAGE
    saved, PACKAGE = PACKAGE, tmp_path / "otel_eval"
    try:
        assert [i.target for i in imports(path)] == ["typing.TYPE_CHECKING"]
    finally:
        PACKAGE = saved
