"""Running a benchmark's workload under valgrind's callgrind and reading the instructions of its measured window.

The window is cut with ``--dump-before=time_sleep``: the workload calls ``time.sleep`` once before it and once after
it, so that the process's dump 1 holds its start-up and warm-up, dump 2 the window and the later dumps the rest (the
workload checks that nothing else slept before its window ended). With ``children`` every process the workload
starts is traced too (``--trace-children=yes``, one file per process): the evaluation process of
``isolation="process"`` cannot see the agent's pauses, so it marks its own window at the two flushes that come right
before them (marked by the agent with the file :data:`MARK_FILE` names) (the agent's ``force_flush`` reaches its meter provider, whose exporter
:class:`WindowMarkingMetricExporter` then calls ``os.sched_yield()``, a second trigger, :data:`CHILD_MARK`, so that
its marks are told from any other dump by the trigger each dump names); whatever it does between its mark and the
agent's is waiting, or the same flush reply at both ends. Instructions counted this way do not depend on the machine's load,
unlike CPU times.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks._counting import EXPORTER_NAME, CountingMetricExporter

MARK = "time_sleep"
"""The C function of ``time.sleep``: callgrind dumps before each call of it."""
MARK_FILE = "BENCH_CALLGRIND_MARK_FILE"
"""A path: the evaluation process marks the first ``force_flush`` that finds the file, and removes it (the agent
creates it around the flushes that end its warm-up and its window): one mark per marked flush."""
CHILD_MARK = "os_sched_yield"
"""The C function of ``os.sched_yield``, the evaluation process's mark: its dumps are told from any other by their
trigger, so a stray ``time.sleep`` there (one was seen before its first flush) adds a dump, not a shift."""
_DUMP = re.compile(r"callgrind\.out\.(\d+)(?:\.(\d+))?(?:-(\d+))?$")


class WindowMarkingMetricExporter(CountingMetricExporter):
    """The counting metric exporter that also marks callgrind's window on each ``force_flush`` (``os.sched_yield``).

    Loaded in the evaluation process through the SDK's entry points (:func:`entry_points`), whose flush is the
    agent's ``force_flush`` reaching it: that process's dumps are then cut where the agent's are."""

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        marker = os.environ.get(MARK_FILE)
        if not marker:
            return True
        try:  # only the flushes the agent marks, once each (a flush may reach the meter provider more than once)
            os.remove(marker)
        except FileNotFoundError:
            return True
        os.sched_yield()  # callgrind dumps here
        return True


def entry_points(directory: Path) -> Path:
    """Writes a distribution's metadata into ``directory`` registering, as ``bench_counting``, the counting span and
    log exporters and :class:`WindowMarkingMetricExporter`; with ``directory`` on a child's ``PYTHONPATH`` and
    ``OTEL_{TRACES,LOGS,METRICS}_EXPORTER=bench_counting`` the evaluation process exports to them."""
    info = directory / "otel_eval_bench_window-0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: otel-eval-bench-window\nVersion: 0\n")
    (info / "entry_points.txt").write_text(
        f"[opentelemetry_traces_exporter]\n{EXPORTER_NAME} = benchmarks._counting:CountingSpanExporter\n\n"
        f"[opentelemetry_logs_exporter]\n{EXPORTER_NAME} = benchmarks._counting:CountingLogExporter\n\n"
        f"[opentelemetry_metrics_exporter]\n{EXPORTER_NAME} = benchmarks._callgrind:WindowMarkingMetricExporter\n"
    )
    return directory


def missing() -> str | None:
    """Why callgrind cannot run here (None: it can)."""
    if shutil.which("valgrind") is None:
        return "valgrind is not installed (apt-get install valgrind): instruction counts skipped"
    return None


@dataclass(frozen=True)
class Window:
    """One traced process's instructions in the measured window."""

    pid: int
    command: str
    part: int  # the dump that holds the window
    instructions: int
    marks: int  # numbered dumps: the window's marks, plus any later ones (a flush or a wait at shutdown)


@dataclass(frozen=True)
class Run:
    """What one run under callgrind gave: the main process's window first, then its children's; its stdout."""

    windows: list[Window]
    stdout: str

    @property
    def total(self) -> int:
        """The window's instructions over every traced process."""
        return sum(window.instructions for window in self.windows)


def run(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    children: bool = False,
    main_thread: bool = False,
    child_window: int = 2,
    keep: str | None = None,
    timeout: float = 7200,
) -> Run:
    """Runs ``argv`` (``python -m module ...``) under callgrind; every process's window: the main process's dump 2,
    its children's dump ``child_window`` (``main_thread``: the main thread of the main process only,
    ``--separate-threads=yes``). ``keep``: copy the window dumps to this prefix.

    Raises:
        RuntimeError: the program failed, or a process did not mark its window exactly where expected.
    """
    with tempfile.TemporaryDirectory(prefix="callgrind-") as tmp:
        command = ["valgrind", "--tool=callgrind", f"--dump-before={MARK}"]
        command += [f"--callgrind-out-file={tmp}/callgrind.out.%p", f"--log-file={tmp}/valgrind.%p.log"]
        if children:
            command += ["--trace-children=yes", f"--dump-before={CHILD_MARK}"]
        if main_thread:
            command.append("--separate-threads=yes")
        done = subprocess.run(
            [*command, *argv], cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=timeout, check=False
        )
        if done.returncode != 0:
            logs = "".join(path.read_text()[-1500:] for path in Path(tmp).glob("valgrind.*.log"))
            raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-3000:]}\n{logs}")
        dumps: dict[int, list[tuple[int, int, Path]]] = {}
        for path in Path(tmp).glob("callgrind.out.*"):
            found = _DUMP.match(path.name)
            if found:
                pid, part, thread = (int(group) if group else 0 for group in found.groups())
                dumps.setdefault(pid, []).append((part, thread, path))
        started = " ".join(argv[:3])  # the process started here (its children run other modules)
        commands = {pid: _command([path for _, _, path in found]) for pid, found in dumps.items()}
        parent = next((pid for pid, command in commands.items() if command.startswith(started)), None)
        if parent is None:
            raise RuntimeError(f"no callgrind dump of {started}: {sorted(commands.values())}")
        windows = [_window(parent, commands[parent], dumps.pop(parent), 2, main_thread)]
        windows += [_child_window(pid, commands[pid], found, child_window) for pid, found in sorted(dumps.items())]
        if keep:
            for window in windows[:1]:
                for path in Path(tmp).glob(f"callgrind.out.{window.pid}.{window.part}*"):
                    shutil.copy(path, f"{keep}{path.name.removeprefix('callgrind.out')}")
    unmarked = [window.command for window in windows if window.marks < window.part]
    if unmarked:
        raise RuntimeError(f"processes that did not mark their window: {unmarked}")
    return Run(windows, done.stdout)


def _command(dumps: list[Path]) -> str:
    """The command line in a process's dumps (with threads dumped apart, its unnumbered file is empty)."""
    for dump in dumps:
        with dump.open(errors="replace") as lines:
            for line in itertools.islice(lines, 20):
                if line.startswith("cmd:"):
                    return line[4:].strip()
    return "?"


def _window(pid: int, command: str, dumps: list[tuple[int, int, Path]], part: int, main_thread: bool) -> Window:
    """A process's window: its dump ``part`` (of the main thread, ``-01``, when threads were dumped apart)."""
    parts = {number for number, _, _ in dumps if number}
    window = [path for number, thread, path in dumps if number == part and (not main_thread or thread == 1)]
    return Window(pid, command[:200], part, sum(summary(path) for path in window), len(parts))


def _child_window(pid: int, command: str, dumps: list[tuple[int, int, Path]], mark: int) -> Window:
    """A child's window: its dumps after the one its mark ``mark - 1`` ended, up to the one its mark ``mark`` ended
    (dumps that other triggers ended in between are summed in)."""
    numbered = sorted((part, path) for part, _, path in dumps if part)
    ends = [part for part, path in numbered if _trigger(path) == CHILD_MARK]
    if len(ends) < mark:
        return Window(pid, command[:200], mark, 0, len(ends))
    first = ends[mark - 2] + 1 if mark >= 2 else 1
    window = [path for part, path in numbered if first <= part <= ends[mark - 1]]
    return Window(pid, command[:200], mark, sum(summary(path) for path in window), len(ends))


def _trigger(dump: Path) -> str:
    """The function whose call ended a dump (``desc: Trigger: --dump-before=NAME``)."""
    with dump.open(errors="replace") as lines:
        for line in itertools.islice(lines, 30):
            if line.startswith("desc: Trigger:"):
                return line.rsplit("=", 1)[-1].strip()
    return ""


def summary(dump: Path) -> int:
    """The instructions counted in a callgrind dump (its ``summary:`` line; 0 for a thread that ran nothing)."""
    with dump.open(errors="replace") as lines:
        return next((int(line.split()[1]) for line in lines if line.startswith("summary:")), 0)
