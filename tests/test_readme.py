"""The README and the documentation cannot drift from the code: the generated reference tables (docs/_hooks) hold
every environment variable, metric and emitted instrument and sit on their pages, every shell block marked
``<!-- runnable -->`` in README.md, docs/*.md and deploy/README.md runs as written (in a temporary copy of the
shipped files, with the venv's ``bin`` first on PATH as after ``. .venv/bin/activate``), every Python block
compiles, the README stays a front door whose links resolve, and the files deploy/README.md names exist."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from otel_eval import environment_variables, semconv
from otel_eval.metrics import default_registry

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
DEPLOY_README = (REPO / "deploy" / "README.md").read_text(encoding="utf-8")
DOCS = {f"docs/{path.name}": path.read_text(encoding="utf-8") for path in sorted((REPO / "docs").glob("*.md"))}
DOCUMENTS = {"README.md": README, **DOCS, "deploy/README.md": DEPLOY_README}
"""Every Markdown file whose runnable blocks run: README.md and docs/ from the checkout's root, deploy/ from deploy/."""
README_MAX_LINES = 200
RUNNABLE = "<!-- runnable -->"
SHIPPED = ("examples", "deploy", "collector_config")
"""What a README command may name: the folders copied into the temporary checkout."""
EXPECTED_EXIT = re.compile(r"#.*\bexits (\d+)\b")


def _load_hook() -> ModuleType:
    """docs/_hooks/reference_tables.py, the MkDocs hook that generates the reference tables."""
    path = REPO / "docs" / "_hooks" / "reference_tables.py"
    spec = importlib.util.spec_from_file_location("docs_reference_tables", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


HOOK = _load_hook()


@dataclass(frozen=True)
class Command:
    readme: str  # path relative to the repository: deploy/ commands run in deploy/, the others at the root
    line: int
    text: str

    @property
    def folder(self) -> str:
        return "deploy" if self.readme.startswith("deploy/") else "."

    @property
    def expected_exit(self) -> int:
        match = EXPECTED_EXIT.search(self.text)
        return int(match.group(1)) if match else 0

    def __str__(self) -> str:
        return f"{self.readme}:{self.line}: {self.text}"


def runnable_commands(readme: str, markdown: str) -> list[Command]:
    """Each command line (backslash continuations joined) of the ``sh`` blocks right after a runnable marker, and
    each ``python`` block right after one, whole (run by ``python -``)."""
    lines = markdown.splitlines()
    commands = []
    for index, line in enumerate(lines):
        if line.strip() != RUNNABLE:
            continue
        if lines[index + 1].startswith("```python"):
            end = lines.index("```", index + 2)
            script = "\n".join(lines[index + 2 : end])
            commands.append(Command(readme, index + 3, f"python - <<'PYTHON_BLOCK'\n{script}\nPYTHON_BLOCK"))
            continue
        assert lines[index + 1].startswith("```sh"), f"{readme}:{index + 1}: {RUNNABLE} must precede a ```sh block"
        pending, start = "", 0
        for number in range(index + 2, len(lines)):
            text = lines[number]
            if text.startswith("```"):
                break
            pending, start = pending + text.rstrip().removesuffix("\\"), start or number + 1
            if not text.rstrip().endswith("\\") and pending.strip():
                commands.append(Command(readme, start, pending.strip()))
                pending, start = "", 0
    return commands


def _unique(commands: list[Command]) -> list[Command]:
    """The first of the commands with the same text and folder: one shown in the README and a page runs once."""
    seen: set[tuple[str, str]] = set()
    unique = []
    for command in commands:
        if (command.folder, command.text) not in seen:
            seen.add((command.folder, command.text))
            unique.append(command)
    return unique


COMMANDS = _unique([command for name, text in DOCUMENTS.items() for command in runnable_commands(name, text)])


def test_every_environment_variable_is_in_the_generated_table() -> None:
    names = [value for name, value in vars(environment_variables).items() if name.startswith("OTEL_EVAL_")]
    assert len(names) > 40
    table = HOOK.environment_variables_table()
    missing = [name for name in names if f"| `{name}` | " not in table]
    assert not missing, f"the environment-variable table lacks: {', '.join(missing)}"
    assert all(len(row.split(" | ")[1]) > 10 for row in table.splitlines()[2:]), "a variable without a meaning"


def test_every_metric_is_in_the_generated_table() -> None:
    table = HOOK.metrics_table()
    missing = [name for name in default_registry().names() if f"| `{name}` |" not in table]
    assert not missing, f"the metrics table lacks: {', '.join(missing)}"
    assert "| `response_evaluation_score` | [1, 5] | 3.5 | yes | yes |" in table


def test_every_emitted_instrument_is_in_the_generated_telemetry_names() -> None:
    table = HOOK.telemetry_names_table()
    instruments = {value for name, value in vars(semconv).items() if name.startswith("METRIC_")}
    assert len(instruments) > 20
    missing = sorted(name for name in instruments if f"| `{name}` |" not in table)
    assert not missing, f"the telemetry-name table lacks: {missing}"
    assert (
        "### Emitted: instruments" in table and "| `gen_ai.evaluation.results` | `METRIC_EVALUATION_RESULTS` |" in table
    )


def test_each_generated_table_sits_on_its_page() -> None:
    pages = {"environment-variables": "docs/configuration.md", "metrics": "docs/metrics.md"}
    pages["telemetry-names"] = "docs/telemetry.md"
    assert set(pages) == set(HOOK.TABLES)
    for table, page in pages.items():
        assert f"<!-- generated: {table} -->" in DOCS[page].splitlines(), f"{page} lacks the {table} marker"
    used = {match for text in DOCS.values() for match in HOOK.MARKER.findall(text)}
    assert used == set(HOOK.TABLES), f"unknown markers: {used - set(HOOK.TABLES)}"
    assert "OTEL_EVAL_WORKER_FLUSH_TIMEOUT" in HOOK.render(DOCS["docs/configuration.md"])


def test_the_committed_tables_are_the_codes() -> None:
    """The tables are committed (a page read on GitHub shows them) and are what the code renders now."""
    for page, text in DOCS.items():
        if HOOK.MARKER.search(text):
            assert "<!-- end generated: " in text, f"{page}: a table is not committed: run make docs-tables"
            assert HOOK.render(text) == text, f"{page}: a generated table is out of date: run make docs-tables"


def test_setup_is_the_two_commands() -> None:
    assert "make demo" in README and "make test" in README


def test_the_readme_is_a_front_door() -> None:
    """Short (as uvicorn's and aiokafka's are), and every page of the documentation is linked from it."""
    assert len(README.splitlines()) <= README_MAX_LINES, f"README.md has {len(README.splitlines())} lines"
    unlinked = [page for page in DOCS if page != "docs/index.md" and f"]({page})" not in README]
    assert not unlinked, f"README.md does not link {unlinked}"


def _anchors(markdown: str) -> set[str]:
    """The heading ids MkDocs gives a page (the toc extension's default slugs)."""
    headings = re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", markdown, flags=re.DOTALL), re.MULTILINE)
    return {re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", heading).strip().lower()) for heading in headings}


def test_the_readme_links_resolve() -> None:
    """MkDocs checks the pages' links (make docs is strict); this checks the README's, anchors included."""
    links = re.findall(r"\]\(([^)#]+)(?:#([^)]+))?\)", README)
    assert len(links) > 10
    for target, anchor in links:
        if target.startswith("http"):
            continue
        path = REPO / target
        assert path.exists(), f"README.md links to {target}, which does not exist"
        if anchor:
            assert anchor in _anchors(path.read_text(encoding="utf-8")), f"README.md: no #{anchor} in {target}"


def test_the_walk_covers_the_first_hour() -> None:
    """The commands a newcomer runs first are among the walked ones (a marker removed would skip them silently)."""
    texts = [command.text for command in COMMANDS]
    for expected in (
        "otel-eval demo --judge local",
        "OTEL_EVAL_CONSOLE=true python examples/weather_agent.py",
        "python examples/adk_agent.py",
        "otel-eval run examples/traces/*.json -m hallucinations_v1",
        "otel-eval validate examples/traces/eval_set_helm.json examples/traces/test_config.json",
        "promtool test rules prometheus/tests/*.yaml",
        "python - <<'PYTHON_BLOCK'\nfrom opentelemetry import trace",  # docs/deploying.md: the alert's set-up
    ):
        assert any(text.startswith(expected) for text in texts), f"no runnable README command starts with {expected!r}"


def test_every_python_block_compiles() -> None:
    for name, markdown in DOCUMENTS.items():
        for block in re.findall(r"```python\n(.*?)```", markdown, re.DOTALL):
            ast.parse(textwrap.dedent(block), filename=name)  # a block in a list item is indented with it


def test_files_named_in_deploy_readme_exist() -> None:
    named = set(re.findall(r"`([\w./-]+\.(?:ya?ml|json))`", DEPLOY_README))
    assert named
    shipped = {path.name for folder in SHIPPED for path in (REPO / folder).rglob("*") if path.is_file()}
    missing = sorted(name for name in named if Path(name).name not in shipped)
    assert not missing, f"deploy/README.md names files that do not exist: {missing}"


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A temporary copy of what the README commands use, as a fresh clone has it."""
    root = tmp_path_factory.mktemp("checkout")
    for folder in SHIPPED:
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__", ".venv*"))
    return root


CONCURRENT_COMMANDS = 4
"""README commands run side by side: they are independent (their own ports and output files), and most of their time
is a fresh interpreter's start-up or a ``sleep`` before a judge server listens."""


def _run(command: Command, checkout: Path) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GOOGLE_", "GEMINI_"))}
    environ["PATH"] = os.pathsep.join((str(Path(sys.executable).parent), environ.get("PATH", "")))
    environ["PYTHONPATH"] = str(REPO)  # this checkout's code, as the editable install of a clone would give
    return subprocess.run(
        ["bash", "-c", f"set -o pipefail; {command.text}"],
        cwd=checkout / command.folder,
        env=environ,
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.fixture(scope="module")
def started(
    request: pytest.FixtureRequest, checkout: Path
) -> Iterator[dict[Command, Future[subprocess.CompletedProcess[str]]]]:
    """Every selected README command, started at the first one's test, :data:`CONCURRENT_COMMANDS` at a time."""
    selected = [
        item.callspec.params["command"]
        for item in request.session.items
        if item.module is request.module and hasattr(item, "callspec") and "command" in item.callspec.params
    ]
    with ThreadPoolExecutor(CONCURRENT_COMMANDS) as pool:
        yield {command: pool.submit(_run, command, checkout) for command in selected}


@pytest.mark.integration
@pytest.mark.parametrize("command", COMMANDS, ids=str)
def test_readme_command_runs_as_written(
    command: Command, started: dict[Command, Future[subprocess.CompletedProcess[str]]]
) -> None:
    process = started[command].result()
    assert process.returncode == command.expected_exit, (
        f"{command}\nexit {process.returncode}, expected {command.expected_exit}\n"
        f"--- stdout\n{process.stdout[-3000:]}\n--- stderr\n{process.stderr[-3000:]}"
    )
    assert "Traceback" not in process.stderr, f"{command}\n{process.stderr[-3000:]}"
