"""``otel-eval judge-server``: the scripted local judge served on loopback, for judged scores with one's own agent and
no key (the verdicts are scripted, not a model's)."""

from __future__ import annotations

import os
import shlex
import signal
import sys
import tempfile
import threading
from types import FrameType

import click

from otel_eval import environment_variables as env


@click.command("judge-server")
@click.option(
    "--port", type=click.IntRange(0, 65535), default=0, show_default=True, help="Port on 127.0.0.1 (0: a free one)."
)
@click.option(
    "--print-env",
    is_flag=True,
    help="Print only the export lines, once serving, then write to a log file instead of stdout and stderr: "
    'eval "$(otel-eval judge-server --print-env &)" sets them in your shell and leaves the judge running '
    "in the background (its pid and log file on stderr; kill it to stop it).",
)
def judge_server(port: int, print_env: bool) -> None:
    """Serve a SCRIPTED judge: a Gemini-compatible server on 127.0.0.1 answering fixed verdicts, no model, no key.

    It also speaks OpenAI Chat Completions, Anthropic Messages (and Claude on Vertex AI's rawPredict) and Ollama, so
    a judge model of another provider (gpt-4o-mini, anthropic/claude-sonnet-4-5, ollama/llama3.1, ...) is judged here
    through that provider's own client.

    It answers the prompts of hallucinations_v1 (every sentence supported, but for the demo's one hallucinated
    answer) and safety_v1 (safe); any other judge prompt gets an error (NOT_EVALUATED). Its answers say they come
    from the model 'scripted-local-judge', which no backend prices. Point your agent's judge at it with the
    variables printed (the judge's own: your agent's google-genai calls keep their endpoint), or let your shell set
    them: eval "$(otel-eval judge-server --print-env &)". Stops on Ctrl-C or SIGTERM.
    """
    from otel_eval.demo.local_judge import (  # deferred: keeps `otel-eval --help` fast
        LOOPBACK_KEY,
        SCRIPTED_JUDGE_MODEL,
        SCRIPTED_METRICS,
        scripted_judge_server,
    )

    server = scripted_judge_server(port)
    try:
        server.start()
    except OSError as exc:
        raise click.ClickException(f"cannot serve on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    stop = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = signal.signal(signal.SIGTERM, _stop)
    exports = (
        (env.OTEL_EVAL_JUDGE_BASE_URL, server.base_url),
        (env.OTEL_EVAL_JUDGE_API_KEY, LOOPBACK_KEY),
        (env.OTEL_EVAL_JUDGE_MODEL, SCRIPTED_JUDGE_MODEL),
    )
    try:
        if print_env:
            _print_env_and_detach(
                exports,
                f"judge-server: SCRIPTED judge (not a model) serving {server.base_url} as model "
                f"'{SCRIPTED_JUDGE_MODEL}', pid {os.getpid()} (`kill {os.getpid()}` stops it)",
            )
        else:
            _banner(server.base_url, exports, SCRIPTED_METRICS, SCRIPTED_JUDGE_MODEL)
        try:
            while not stop.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.stop()
        click.echo("judge-server stopped", err=True)


def _print_env_and_detach(exports: tuple[tuple[str, str], ...], status: str) -> None:
    """The export lines on stdout and ``status`` with the log's path on stderr, then both pointed at that log file:
    a ``$(...)`` reading stdout ends at once, and a script whose output is piped (``... | cat``) ends with the script,
    since the server no longer holds the caller's stdout or stderr, while it goes on serving."""
    for name, value in exports:
        click.echo(f"export {name}={shlex.quote(value)}")
    sys.stdout.flush()
    log = os.path.join(tempfile.gettempdir(), f"otel-eval-judge-server-{os.getpid()}.log")
    descriptor = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    click.echo(f"{status}; its log: {log}", err=True)
    sys.stderr.flush()
    try:
        os.dup2(descriptor, sys.stdout.fileno())
        os.dup2(descriptor, sys.stderr.fileno())
    finally:
        os.close(descriptor)


def _banner(base_url: str, exports: tuple[tuple[str, str], ...], metrics: tuple[str, ...], model: str) -> None:
    """What the judge serves, the variables to export and what the scores will say, for a terminal of its own."""
    click.echo(
        f"SCRIPTED judge (not a model): {base_url} answers fixed verdicts for "
        f"{', '.join(metrics)} as model '{model}'.\n"
        "Set these where your agent runs (the judge's own endpoint and key; the agent keeps its own):\n"
    )
    for name, value in exports:
        click.echo(f"export {name}={value}")
    click.echo(
        "\nIt also speaks OpenAI Chat Completions (/v1/chat/completions), Anthropic Messages (/v1/messages, and "
        "Claude on Vertex AI's rawPredict) and Ollama (/api/chat, /api/generate): to judge through another "
        f"provider's own client, set {env.OTEL_EVAL_JUDGE_MODEL} to gpt-4o-mini (extra 'openai'), "
        "anthropic/claude-sonnet-4-5, openai/gpt-4o-mini or ollama/llama3.1 (extra 'litellm'), or "
        "claude-sonnet-4-5 with GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION set (extra 'anthropic')."
    )
    click.echo(
        f"\nScores judged here are scripted: otel_eval.judge.model={model} (a criterion naming its "
        "own judge_model is still judged here, under that name). Ctrl-C stops."
    )
    sys.stdout.flush()
