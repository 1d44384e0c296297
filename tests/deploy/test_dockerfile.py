"""deploy/Dockerfile, checked statically: pinned bases, non-root user, the worker entrypoint, a minimal context."""

from __future__ import annotations

import json
import re

from tests.deploy.conftest import DEPLOY, REPO

DOCKERFILE = DEPLOY / "Dockerfile"


def _instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text(encoding="utf-8"))
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "") for line in lines]


def test_every_base_image_is_pinned() -> None:
    stages: set[str] = set()
    bases = []
    for instruction, argument in _instructions():
        if instruction == "FROM":
            image, *rest = argument.split()
            if rest and rest[0].upper() == "AS":
                stages.add(rest[1])
            if image not in stages:
                bases.append(image)
    assert bases
    for image in bases:
        assert "$" not in image, f"{image}: the base must not come from a build argument"
        assert re.search(r":\d+\.\d+\.\d+[\w.-]*$|@sha256:[0-9a-f]{64}$", image), f"{image} is not pinned"
        assert ":latest" not in image


def test_the_image_runs_as_a_non_root_user() -> None:
    users = [argument for instruction, argument in _instructions() if instruction == "USER"]
    assert users, "no USER: the worker would run as root"
    user = users[-1].split(":")[0]
    assert user.isdigit() and int(user) != 0, f"USER {users[-1]}: use a numeric non-root uid (runAsNonRoot)"
    last_from = max(i for i, (instruction, _) in enumerate(_instructions()) if instruction == "FROM")
    last_user = max(i for i, (instruction, _) in enumerate(_instructions()) if instruction == "USER")
    assert last_user > last_from, "USER must be set in the final stage"


def test_the_entrypoint_is_the_worker() -> None:
    (entrypoint,) = [argument for instruction, argument in _instructions() if instruction == "ENTRYPOINT"]
    assert json.loads(entrypoint) == ["otel-eval", "worker"]


def test_the_image_copies_only_what_exists_and_the_context_allows() -> None:
    ignore = (DEPLOY / "Dockerfile.dockerignore").read_text(encoding="utf-8").splitlines()
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    for instruction, argument in _instructions():
        if instruction == "COPY" and not argument.startswith("--from"):
            *sources, _ = argument.split()
            for source in sources:
                assert (REPO / source).exists(), f"COPY {source}: not in the repository"
                assert source.rstrip("/") in allowed, f"COPY {source}: excluded by Dockerfile.dockerignore"


def _locked() -> dict[str, tuple[str, list[str]]]:
    """deploy/requirements.lock: name -> (version, hashes)."""
    text = re.sub(r"\\\n\s*", " ", (DEPLOY / "requirements.lock").read_text(encoding="utf-8"))
    locked = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            requirement, *options = line.split()
            name, version = requirement.split("==")
            locked[name] = (version, [o.removeprefix("--hash=sha256:") for o in options])
    return locked


def test_every_base_is_pinned_by_digest_and_the_dependencies_by_hash() -> None:
    bases = [argument.split()[0] for instruction, argument in _instructions() if instruction == "FROM"]
    assert bases and all(re.search(r"@sha256:[0-9a-f]{64}$", image) for image in bases), bases
    installs = [
        argument for instruction, argument in _instructions() if instruction == "RUN" and "pip install" in argument
    ]
    assert any("--require-hashes" in run and "deploy/requirements.lock" in run for run in installs)
    assert all("--no-deps" in run for run in installs), "every install takes its dependencies from the lock only"
    locked = _locked()
    assert all(re.fullmatch(r"[0-9a-f]{64}", h) for _, hashes in locked.values() for h in hashes)
    assert all(hashes for _, hashes in locked.values())


def test_the_lock_satisfies_the_runtime_dependencies() -> None:
    import tomllib

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    locked = {canonicalize_name(name): version for name, (version, _) in _locked().items()}
    wanted = [Requirement(r) for r in [*project["dependencies"], *project["optional-dependencies"]["prometheus"]]]
    for requirement in wanted:
        name = canonicalize_name(requirement.name)
        assert name in locked, f"{requirement}: not in deploy/requirements.lock"
        assert requirement.specifier.contains(locked[name], prereleases=True), f"{requirement}: locked {locked[name]}"
    assert {"hatchling", "setuptools"} <= set(locked)  # what builds otel-eval and rouge-score's sdist
