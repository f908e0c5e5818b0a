"""Which harness a sandbox image carries.

The image is labelled with the harness version and a digest of the harness's source
(``judge/__init__.py`` and ``judge/harness/*.py``), computed here and by
``docker/build-image.sh`` through this module. The docker backend refuses an image whose
labels do not match the running judge, so a stale image is never used by mistake.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import judge

VERSION_LABEL = "org.jaxjudge.harness-version"
DIGEST_LABEL = "org.jaxjudge.harness-digest"


def harness_files() -> list[Path]:
    root = Path(judge.__file__).parent
    return [root / "__init__.py", *sorted((root / "harness").glob("*.py"))]


def harness_digest() -> str:
    digest = hashlib.sha256()
    root = Path(judge.__file__).parent.parent
    for path in harness_files():
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


if __name__ == "__main__":
    print(harness_digest())
