"""The zygote's frames: how bytes travel on its container's standard input and output.

A frame is a byte of kind, four bytes of length (big-endian), the payload. In (from the
trusted side): ``SPAWN`` (JSON: the child's tmpfs size and compile flags), ``DATA``
(bytes for the child's standard input), ``CLOSE`` (its end of input), ``DONE`` (the
trusted side has seen ``EXIT`` and sends nothing more for this child). Out: ``READY``
(JSON, once), ``DATA`` (what the child wrote on its protocol descriptor), ``DIAG`` (its
standard error, capped), ``EXIT`` (JSON: how it ended, and how many processes the memory
limit killed meanwhile). The child's bytes travel only inside ``DATA`` and ``DIAG``
frames, so nothing it writes can pose as the zygote or as another child.
"""

from __future__ import annotations

import os
import struct

HEADER = struct.Struct(">BI")
SPAWN, DATA, CLOSE, READY, DIAG, EXIT, DONE = 1, 2, 3, 4, 5, 6, 7
MAX_FRAME = 96 << 20  # a test's inputs (64 MiB) and its framing, with room
CHUNK = 1 << 16


def read_exact(fd: int, n: int) -> bytes | None:
    """Exactly ``n`` bytes from ``fd`` (None at end of file): never a byte more."""
    data = bytearray()
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def send_frame(fd: int, kind: int, payload: bytes) -> None:
    data = memoryview(HEADER.pack(kind, len(payload)) + payload)
    while data:
        data = data[os.write(fd, data):]
