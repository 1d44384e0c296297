"""`make screenshots`: the pictures of docs/recipe-adk.md, taken from a real run of its recipes.

It starts a real Phoenix and a real MLflow (tests/emit/sinks/servers.py), runs the page's recipes as the test does
(tests/docs/test_adk_recipes.py: ``adk-phoenix``, ``adk-mlflow``, then ``adk-prometheus`` with a real Prometheus),
and photographs each server's own UI with a real headless Chromium driven by Playwright, into ``docs/images/``:

- ``adk-phoenix-tokyo.png`` / ``adk-phoenix-london.png``: each failing invocation's root span and its annotations;
- ``adk-mlflow-tokyo.png`` / ``adk-mlflow-london.png``: the same two traces in MLflow with their assessments;
- ``adk-prometheus-alert.png``: Prometheus's Alerts page with ``OtelEvalHallucinationRateHigh`` pending.

Needs ``pip install playwright`` (the Python client only: the browser is the system's Chromium, ``CHROMIUM``,
default ``/usr/bin/chromium``, e.g. Debian's ``apt-get install chromium``; never ``playwright install``) and
Prometheus on PATH. Not part of ``make test``: it takes minutes and only makes pictures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.docs import test_adk_recipes as adk
from tests.docs.recipes import REPO, recipe, run_bash
from tests.emit.sinks.servers import BackendServer, free_port, mlflow_server, phoenix_server

IMAGES = REPO / "docs" / "images"
WIDTH, HEIGHT = 1280, 800
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
MAX_BYTES = 300_000


def _checkout(root: Path) -> Path:
    for folder in ("examples", "deploy"):
        shutil.copytree(REPO / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _check(process: subprocess.CompletedProcess[str], what: str) -> None:
    if process.returncode != 0:
        raise RuntimeError(f"{what} failed ({process.returncode}): {process.stderr[-2000:]}")


def _save(page: Any, name: str, *, full_page: bool = False) -> None:
    """A PNG of the page at 1280 px, made smaller (a palette) when over :data:`MAX_BYTES`."""
    path = IMAGES / name
    page.screenshot(path=str(path), full_page=full_page)
    if path.stat().st_size > MAX_BYTES:
        from PIL import Image  # optional: only to shrink a large picture

        with Image.open(path) as image:
            image.convert("RGB").quantize(colors=128).save(path, optimize=True)
    print(f"{path.relative_to(REPO)}: {path.stat().st_size // 1024} KB")


def _phoenix_project(phoenix: BackendServer) -> str:
    projects = adk._graphql(phoenix, "{ projects { edges { node { id name } } } }")["projects"]["edges"]
    return str(next(edge["node"]["id"] for edge in projects if edge["node"]["name"] == adk.PROJECT))


def _page(browser: Any, base: str, init: str = "") -> Any:
    """A 1280 px page that reaches ``base`` only (the UIs' font CDNs and version checks are offline here)."""
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    if init:
        context.add_init_script(init)
    context.route(lambda url: not url.startswith(base), lambda route: route.abort())
    return context.new_page()


def shoot_phoenix(browser: Any, phoenix: BackendServer) -> None:
    """Each failing invocation's root span, found by the page's Spans-tab filter, its annotations open and the
    failing one's card (label, score, explanation) shown."""
    project = _phoenix_project(phoenix)
    for condition, annotation, name in (
        (next(iter(adk.SPAN_FILTERS)), "hallucinations_v1", "adk-phoenix-tokyo.png"),
        (list(adk.SPAN_FILTERS)[1], "tool_trajectory_avg_score", "adk-phoenix-london.png"),
    ):
        page = _page(browser, phoenix.url, "localStorage.setItem('arize-phoenix-theme', 'light')")
        page.goto(f"{phoenix.url}/projects/{project}/spans", wait_until="load")
        page.get_by_text("invoke_workflow weather_agent").first.wait_for(timeout=60_000)
        box = page.locator(".cm-content").first
        box.click()
        page.keyboard.press("Control+A")
        page.keyboard.insert_text(condition)  # as pasted: no auto-closed brackets or quotes
        page.keyboard.press("Enter")
        page.wait_for_timeout(3000)
        page.get_by_text("invoke_workflow weather_agent").first.click(timeout=60_000)
        drawer = page.get_by_test_id("application-drawer-plane")
        header = drawer.locator(".card__collapsible-header").filter(has_text="Annotations").first
        header.click(position={"x": 25, "y": 20})  # opens the card (its chevron)
        page.wait_for_timeout(1500)
        drawer.get_by_text(annotation, exact=True).first.hover()  # the annotation's details
        page.wait_for_timeout(1500)
        _save(page, name)
        page.close()


def shoot_mlflow(browser: Any, mlflow: BackendServer) -> None:
    """The Tokyo and the London trace, each with its assessments pane open and the failing assessment expanded."""
    page = _page(browser, mlflow.url)
    page.goto(f"{mlflow.url}/#/experiments/0/traces", wait_until="load")
    page.wait_for_timeout(5000)
    for dismiss in ("Got it",):
        if page.get_by_text(dismiss).count():
            page.get_by_text(dismiss).first.click()
    page.mouse.click(1244, 42)  # closes the assistant's pane
    traces = adk._search(mlflow)
    for question, assessment, name in (
        (adk.HALLUCINATED, "hallucinations_v1", "adk-mlflow-tokyo.png"),
        (adk.WRONG_TOOL, "tool_trajectory_avg_sc", "adk-mlflow-london.png"),
    ):
        trace = next(t for t in traces if adk._asked(t) == question)
        trace_id = trace.get("trace_id") or trace["trace_info"]["trace_id"]
        page.goto(f"{mlflow.url}/#/experiments/0/traces?selectedEvaluationId={trace_id}", wait_until="load")
        page.get_by_role("button", name="Assess").first.click(timeout=60_000)
        page.wait_for_timeout(1500)
        title = page.get_by_text(assessment).last.bounding_box()
        page.mouse.click(title["x"] + 12, title["y"] + title["height"] / 2 + 32)  # the value's chevron
        page.wait_for_timeout(1500)
        page.mouse.move(5, HEIGHT - 5)
        _save(page, name)
    page.close()


def shoot_prometheus(browser: Any, url: str) -> None:
    """The Alerts page, inactive rules hidden and the pending alert opened. Debian's build serves only the classic UI
    (``/classic/alerts``; ``/alerts`` answers 404), the upstream release the React one (``/alerts``)."""
    page = _page(browser, url)
    if page.goto(f"{url}/alerts", wait_until="load").status == 404:
        page.goto(f"{url}/classic/alerts", wait_until="load")
        page.locator("label").filter(has=page.locator("#inactiveAlerts")).click()
    page.get_by_text("OtelEvalHallucinationRateHigh").first.click(timeout=60_000)
    page.wait_for_timeout(1500)
    _save(page, "adk-prometheus-alert.png")
    page.close()


def _prometheus_run(phoenix: BackendServer, checkout: Path, shoot: Callable[[str], None]) -> None:
    """The ``adk-prometheus`` recipe, held open once the alert is pending until ``shoot`` has photographed it."""
    port, metrics = free_port(), free_port()
    config = checkout / "examples" / "prometheus.yml"
    config.write_text(config.read_text().replace("127.0.0.1:9464", f"127.0.0.1:{metrics}"))
    ready, done = checkout / "alert-ready", checkout / "alert-shot"
    script = recipe(adk.PAGE, "adk-prometheus") + f"touch {ready}\nwhile [ ! -e {done} ]; do sleep 1; done\n"
    replacements = {
        "http://localhost:6006": phoenix.url,
        "127.0.0.1:9090": f"127.0.0.1:{port}",
        "--metrics-port 9464": f"--metrics-port {metrics}",
    }
    result: list[subprocess.CompletedProcess[str]] = []
    thread = threading.Thread(
        target=lambda: result.append(run_bash(script, replacements, cwd=checkout, timeout=900)), daemon=True
    )
    thread.start()
    try:
        while not ready.exists():
            if not thread.is_alive():
                _check(result[0], "the adk-prometheus recipe")
                raise RuntimeError("the adk-prometheus recipe ended before the alert")
            time.sleep(2)
        shoot(f"http://127.0.0.1:{port}")
    finally:
        done.touch()
        thread.join()
    _check(result[0], "the adk-prometheus recipe")
    if '"state":"pending"' not in result[0].stdout:
        raise RuntimeError(f"the alert did not go pending: {result[0].stdout[-2000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("phoenix", "mlflow", "prometheus"), action="append")
    only = set(parser.parse_args().only or ("phoenix", "mlflow", "prometheus"))
    from playwright.sync_api import sync_playwright

    IMAGES.mkdir(exist_ok=True)
    os.environ.setdefault("OTEL_EVAL_TEST_BACKENDS", str(REPO / ".venv-backends"))
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        work = Path(tmp)
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        if only & {"phoenix", "prometheus"}:
            (work / "phoenix").mkdir()
            phoenix = phoenix_server(work / "phoenix")
            phoenix.start()
            try:
                checkout = _checkout(work / "checkout")
                script = recipe(adk.PAGE, "adk-phoenix")
                _check(
                    run_bash(script, {"http://localhost:6006": phoenix.url}, cwd=checkout, timeout=300), "adk-phoenix"
                )
                if "phoenix" in only:
                    shoot_phoenix(browser, phoenix)
                if "prometheus" in only:
                    _prometheus_run(phoenix, checkout, lambda url: shoot_prometheus(browser, url))
            finally:
                phoenix.stop()
        if "mlflow" in only:
            (work / "mlflow").mkdir()
            mlflow = mlflow_server(work / "mlflow")
            mlflow.start()
            try:
                adk._warm_up(mlflow)
                checkout = _checkout(work / "checkout-mlflow")
                script = recipe(adk.PAGE, "adk-mlflow")
                _check(run_bash(script, {"http://localhost:5000": mlflow.url}, cwd=checkout, timeout=300), "adk-mlflow")
                shoot_mlflow(browser, mlflow)
            finally:
                mlflow.stop()
        browser.close()


if __name__ == "__main__":
    main()
