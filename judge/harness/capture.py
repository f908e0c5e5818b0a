"""What the submission writes: descriptors 1 and 2 go to size-capped files, read back
after loading and after each test (the size cap is the file-size limit the runner sets)."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any


class Capture:
    """Descriptors 1 and 2 go to files in the working directory; this reads them back."""

    def __init__(self, segment_bytes: int) -> None:
        self.segment_bytes = segment_bytes
        self.paths = {"stdout": "stdout.txt", "stderr": "stderr.txt"}
        self.read_fds: dict[str, int] = {}
        self.marks = {"stdout": 0, "stderr": 0}
        for target, (name, path) in zip((1, 2), self.paths.items(), strict=True):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
            os.dup2(fd, target)
            os.close(fd)
            self.read_fds[name] = os.open(path, os.O_RDONLY)

    def _size(self, name: str) -> int:
        try:
            return os.fstat(self.read_fds[name]).st_size
        except OSError:
            return 0

    def total(self) -> int:
        return self._size("stdout") + self._size("stderr")

    def segment(self) -> dict[str, Any]:
        """What was written since the last call: the first bytes as text, and the counts."""
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            with contextlib.suppress(Exception):
                stream.flush()  # type: ignore[union-attr]
        out: dict[str, Any] = {}
        for name, fd in self.read_fds.items():
            size = self._size(name)
            start = min(self.marks[name], size)
            try:
                raw = os.pread(fd, min(size - start, self.segment_bytes), start)
            except OSError:
                raw = b""
            out[name] = raw.decode("utf-8", "replace")
            out[f"{name}_bytes"] = size - start
            self.marks[name] = size
        return out
