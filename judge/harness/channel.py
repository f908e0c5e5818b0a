"""The harness's two ends of the protocol: the events it sends, the messages it reads.

One JSON object per line each way (``judge.sandbox.protocol`` declares both):
:func:`make_sender` writes events on the protocol descriptor with functions bound when it
is called, before the submission loads; :class:`Inbox` reads the supervisor's messages
from a private copy of descriptor 0.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from typing import Any

MAX_MESSAGE_BYTES = 64 << 20  # one message from the supervisor (a test's inputs)


def make_sender(fd: int) -> Callable[..., None]:
    """``send(event, **fields)``: one JSON line on the protocol descriptor, written with
    functions bound now (the submission may rebind ``os.write`` or ``json.dumps``)."""
    write, dumps = os.write, json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
    lock, view_of = threading.Lock(), memoryview

    def send(event: str, **fields: Any) -> None:
        data = (dumps({"event": event, **fields}) + "\n").encode()
        with lock:
            view = view_of(data)
            while view:
                written = write(fd, view)
                view = view[written:]

    return send


class Inbox:
    """The supervisor's messages, one JSON line each, on a private copy of descriptor 0
    (descriptor 0 itself becomes /dev/null before the submission loads)."""

    def __init__(self) -> None:
        self._file = os.fdopen(os.dup(0), "rb")
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)

    def next(self) -> dict[str, Any] | None:
        line = self._file.readline(MAX_MESSAGE_BYTES + 1)
        if not line.endswith(b"\n"):
            return None  # the supervisor closed the channel (or sent too much)
        message: dict[str, Any] = json.loads(line)
        return message

