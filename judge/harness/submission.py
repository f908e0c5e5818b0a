"""The submission's code: loaded as a fresh module, and its exceptions described.

The code is compiled under the file name :data:`FILENAME`, with its lines in
``linecache``, so a description of an exception keeps the submission's own frames and
their source lines, and nothing of the harness's.
"""

from __future__ import annotations

import linecache
import sys
import traceback
import types
from typing import Any

from judge.harness.limits import timed

FILENAME = "submission.py"
MESSAGE_CHARS = 2_000
TRACEBACK_CHARS = 4_000


def new_module(code: str) -> types.ModuleType:
    """An empty module ``submission`` for ``code`` (its lines in ``linecache``)."""
    linecache.cache[FILENAME] = (len(code), None, code.splitlines(True), FILENAME)
    module = types.ModuleType("submission")
    module.__file__ = FILENAME
    sys.modules["submission"] = module
    return module


def load(module: types.ModuleType, code: str, entry_point: str,
         limits: tuple[float, float]) -> Any:
    """Run ``code`` in ``module`` under the alarms (:func:`judge.harness.limits.timed`);
    the function named ``entry_point``, or ``LookupError``."""
    compiled = compile(code, FILENAME, "exec")
    timed(limits, exec, compiled, module.__dict__)
    entry = module.__dict__.get(entry_point)
    if not callable(entry):
        raise LookupError(f"the submission defines no function named {entry_point!r}")
    return entry


def describe_error(exc: BaseException) -> dict[str, Any]:
    """Describe an exception: type, message and the submission's own frames only."""
    try:
        message = str(exc)[:MESSAGE_CHARS]
    except BaseException:
        message = "<the exception's message could not be read>"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == FILENAME]
    line = frames[-1].lineno if frames else None
    tb = "".join(traceback.format_list(frames))[-TRACEBACK_CHARS:]
    return {
        "type": type(exc).__name__[:200],
        "message": message,
        "line": line,
        "traceback": tb,
    }


def is_memory_error(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError):
        return True
    try:
        return "RESOURCE_EXHAUSTED" in str(exc)[:500]
    except BaseException:
        return False
