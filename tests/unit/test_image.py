"""The sandbox image installs what the judge pins, and knows its harness."""

from __future__ import annotations

import re
import tomllib

from judge.sandbox.image import harness_digest, harness_files
from judge.settings import REPO_ROOT


def test_image_requirements_match_pyproject_pins() -> None:
    pinned = {}
    for dep in tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"][
            "dependencies"]:
        name, _, version = dep.partition("==")
        pinned[name.lower()] = version
    image = {}
    for line in (REPO_ROOT / "docker" / "sandbox-requirements.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            image[name.lower()] = version
    assert {"jax", "jaxlib", "flax", "numpy", "optax", "orbax-checkpoint"} <= set(image)
    for name, version in image.items():
        if name in pinned:
            assert pinned[name] == version, name


def test_harness_digest_covers_the_harness_and_changes_with_it(tmp_path, monkeypatch) -> None:
    names = {p.name for p in harness_files()}
    assert {"__init__.py", "runner.py", "codec.py", "__main__.py"} <= names
    digest = harness_digest()
    assert re.fullmatch(r"[0-9a-f]{16}", digest)
    runner = next(p for p in harness_files() if p.name == "runner.py")
    original = runner.read_bytes()
    real_read = type(runner).read_bytes

    def patched(self):
        data = real_read(self)
        return data + b"# changed" if self == runner else data

    monkeypatch.setattr(type(runner), "read_bytes", patched)
    assert harness_digest() != digest
    monkeypatch.undo()
    assert runner.read_bytes() == original and harness_digest() == digest
