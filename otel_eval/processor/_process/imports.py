"""Whether the evaluation process can import the criteria's custom metric code, asked before it starts.

The agent's process imports a custom metric's module with its own ``sys.path``, which holds the script's folder (or
the working directory) and whatever the agent added at run time. The evaluation process runs with a safe module path
(``python -P``, :func:`~otel_eval.processor._process.lifecycle.child_command`): neither is on it. A module found only
there loads in the agent's process and then fails in every evaluation process started, each one lost with the
traces it held. So the question is put to an interpreter started as the evaluation process is, and a module it
cannot find stops start-up, naming the metric and the folder to put on ``PYTHONPATH``.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from otel_eval.errors import ConfigurationError
from otel_eval.model import CustomMetricConfig
from otel_eval.processor._process.lifecycle import safe_python

PROBE: Final = """
import importlib.util, sys
for name in sys.argv[1:]:
    try:
        found = importlib.util.find_spec(name) is not None
    except Exception:
        found = False
    if not found:
        print(name)
"""
"""Prints each module named in its arguments that it cannot find (a dotted name's parent packages are imported)."""

PROBE_TIMEOUT_SECONDS: Final = 60.0


def check_child_imports(custom: Mapping[str, CustomMetricConfig]) -> None:
    """Fails when the evaluation process could not import a custom metric's module (its ``code_config.name`` less
    the function). A probe that cannot run at all (no interpreter, a timeout) decides nothing: the evaluation
    process itself then says what it finds.

    Raises:
        ConfigurationError: naming the metric, its path, the module and where this process found it.
    """
    modules = {name: config.code_config.name.rpartition(".")[0] for name, config in custom.items()}
    wanted = sorted({module for module in modules.values() if module})
    if not wanted:
        return
    try:
        probe = subprocess.run(
            safe_python("-c", PROBE, *wanted), capture_output=True, text=True, timeout=PROBE_TIMEOUT_SECONDS
        )
    except (OSError, subprocess.SubprocessError):
        return
    if probe.returncode != 0:
        return
    missing = set(probe.stdout.split())
    for metric, module in modules.items():
        if module in missing:
            raise ConfigurationError(
                f"custom metric {metric!r} ({custom[metric].code_config.name}): the evaluation process "
                f"(isolation='process') cannot import {module}: it runs with a safe module path (python -P), without "
                f"the script's folder, the working directory or what was added to sys.path at run time; install the "
                f"module, or put {_folder_of(module)} on PYTHONPATH"
            )


def _folder_of(module: str) -> str:
    """The folder this process imported ``module``'s top-level package from, or a generic name for it."""
    top = sys.modules.get(module.partition(".")[0])
    file = getattr(top, "__file__", None)
    if not file:
        return "its folder"
    path = Path(file).resolve()
    is_package = getattr(top, "__path__", None) is not None
    return str(path.parent.parent if is_package else path.parent)
