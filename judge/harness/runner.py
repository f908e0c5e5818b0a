"""The harness's main loop (see the package docstring for the protocol).

Everything here runs in the sandbox next to the submission, so nothing in it is trusted
by the other side: the harness reports what the submission returned and how long it took
by its own clock, and the trusted side checks times against its own clock and decides
every verdict itself.
"""

from __future__ import annotations

import contextlib
import json
import linecache
import os
import resource
import signal
import sys
import threading
import time
import traceback
import types
from typing import Any

from judge.harness import HARNESS_VERSION, PROTOCOL_FD_ENV

FILENAME = "submission.py"
MAX_JOB_BYTES = 64 << 20
MESSAGE_CHARS = 2_000
TRACEBACK_CHARS = 4_000
DEVICE_COUNT = 8


class TimeLimit(BaseException):
    """Raised by the per-test alarm. A BaseException, so ``except Exception`` won't eat it."""


class Protocol:
    """Writes one JSON object per line to the descriptor saved before the redirects."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()

    def send(self, event: str, **fields: Any) -> None:
        line = json.dumps({"event": event, **fields}, separators=(",", ":"), allow_nan=False)
        data = (line + "\n").encode()
        with self._lock:
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]


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


def _alarm(signum: int, frame: Any) -> None:
    raise TimeLimit()


def _error(exc: BaseException) -> dict[str, Any]:
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


def _is_memory_error(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError):
        return True
    try:
        return "RESOURCE_EXHAUSTED" in str(exc)[:500]
    except BaseException:
        return False


def _convert(value: Any, kind: str, jnp: Any, np: Any) -> Any:
    if kind == "float":
        return float(value)
    if kind == "int":
        return int(value)
    if kind == "array":
        return jnp.asarray(value)
    if kind == "numpy":
        return np.asarray(value)
    return value


def _lower_limit(which: int, value: int) -> None:
    soft, hard = resource.getrlimit(which)
    cap = value if hard == resource.RLIM_INFINITY else min(value, hard)
    if soft == resource.RLIM_INFINITY or soft > cap:
        resource.setrlimit(which, (cap, cap))


def _timed(seconds: float, fn: Any, *args: Any) -> Any:
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def main() -> None:
    proto = Protocol(os.dup(int(os.environ.get(PROTOCOL_FD_ENV, "1"))))
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={DEVICE_COUNT}"
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    for sig in (signal.SIGXFSZ, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    signal.signal(signal.SIGALRM, _alarm)

    t0 = time.perf_counter()
    import flax
    import flax.linen  # noqa: F401
    import jax
    import jax.numpy as jnp
    import numpy as np
    from flax import nnx  # noqa: F401

    from judge.harness import codec

    devices = len(jax.devices())
    proto.send(
        "ready",
        harness_version=HARNESS_VERSION,
        import_ms=(time.perf_counter() - t0) * 1000,
        jax_version=jax.__version__,
        flax_version=flax.__version__,
        devices=devices,
    )

    job = json.loads(sys.stdin.buffer.read(MAX_JOB_BYTES))
    limits = job["limits"]
    test_seconds = float(limits["test_seconds"])
    output_bytes = int(limits["output_bytes"])
    result_bytes = int(limits["result_bytes"])
    _lower_limit(resource.RLIMIT_FSIZE, output_bytes + 1)  # a pooled sandbox starts higher
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    capture = Capture(int(limits["segment_bytes"]))

    code: str = job["code"]
    linecache.cache[FILENAME] = (len(code), None, code.splitlines(True), FILENAME)
    module = types.ModuleType("submission")
    module.__file__ = FILENAME
    sys.modules["submission"] = module
    t_load = time.perf_counter()
    try:
        compiled = compile(code, FILENAME, "exec")
        _timed(test_seconds, exec, compiled, module.__dict__)
        entry = module.__dict__.get(job["entry_point"])
        if not callable(entry):
            raise LookupError(f"the submission defines no function named {job['entry_point']!r}")
    except TimeLimit:
        proto.send("load_timeout", time_ms=(time.perf_counter() - t_load) * 1000, **capture.segment())
        os._exit(0)
    except BaseException as exc:  # SyntaxError, ImportError, SystemExit, ...
        info = _error(exc)
        if isinstance(exc, SyntaxError):  # its str() repeats the file and line
            info.update(message=str(exc.msg)[:MESSAGE_CHARS], line=exc.lineno)
        proto.send("compile_error", error=info, **capture.segment())
        os._exit(0)
    proto.send("loaded", time_ms=(time.perf_counter() - t_load) * 1000, **capture.segment())

    for test in job["tests"]:
        index = test["index"]
        proto.send("start", index=index)
        fields: dict[str, Any] = {}
        status = "ok"
        t = time.perf_counter()
        elapsed = 0.0
        try:
            args = [
                _convert(codec.decode_input(a), k, jnp, np)
                for a, k in zip(test["args"], test["kinds"], strict=True)
            ]
            t = time.perf_counter()

            def call(args: list[Any] = args) -> Any:
                out = entry(*args)
                with contextlib.suppress(Exception):
                    jax.block_until_ready(out)
                return out

            value = _timed(test_seconds, call)
            elapsed = time.perf_counter() - t
            fields["value"] = _timed(
                test_seconds, lambda v=value: codec.encode(v, max_bytes=result_bytes)
            )
        except TimeLimit:
            status = "timeout"
        except codec.EncodeLimit as exc:
            status, fields["message"] = "output_limit", f"the return value is too large: {exc}"
        except BaseException as exc:
            status = "memory" if _is_memory_error(exc) else "error"
            fields["error"] = _error(exc)
        if not elapsed:
            elapsed = time.perf_counter() - t
        if capture.total() > output_bytes:
            status = "output_limit"
            fields = {"message": f"the submission wrote more than {output_bytes} bytes"}
        proto.send("result", index=index, status=status, time_ms=elapsed * 1000,
                   **fields, **capture.segment())
        if status in ("output_limit", "timeout"):
            break  # the run is over: the trusted side marks the rest as not run
    proto.send("done")
    os._exit(0)
