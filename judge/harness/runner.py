"""The harness's main loop (see the package docstring for the protocol).

Everything here runs in the sandbox next to the submission, so nothing in it is trusted
by the other side: the harness reports what the submission returned and how long it took
by its own clock, and the trusted side counts the sandbox's CPU time and wall-clock time
itself and decides every verdict. The harness's own alarms (CPU time, wall clock) only let
it stop a call cleanly, a little past the limits. The harness holds as little as it can: the submission's code and
limits, then one test's inputs at a time (never an expected output, never a later test's
inputs), and what it uses to encode results and write protocol lines is bound before the
submission loads and watched by :mod:`judge.harness.integrity`.
"""

from __future__ import annotations

import contextlib
import json
import linecache
import os
import re
import resource
import signal
import sys
import threading
import time
import traceback
import types
from collections.abc import Callable
from typing import Any

from judge.harness import HARNESS_VERSION, PROTOCOL_FD_ENV, program

FILENAME = "submission.py"
MAX_MESSAGE_BYTES = 64 << 20  # one message from the supervisor (a test's inputs)
MESSAGE_CHARS = 2_000
TRACEBACK_CHARS = 4_000
DEVICE_COUNT = 8


class TimeLimit(BaseException):
    """Raised by the per-test alarms (CPU time, wall clock). A BaseException, so
    ``except Exception`` won't eat it."""


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


_EXPORTED: dict[str, dict[str, Any]] = {}  # this submission's exports, by request


class _Done(Exception):
    """A probe's step finished; its fields are filled in."""


def _probe(test: dict[str, Any], entry: Any, clean: bool, fields: dict[str, Any],
           encode: Any, result_bytes: int, jnp: Any, np: Any) -> None:
    """One probe step (judge.probes): export the entry point in the submission's sandbox,
    or compile and run an exported program in a clean one. Nothing else is mixed: a clean
    run never exports, a submission's run never compiles a program it was handed."""
    from judge.harness import codec

    if clean:
        if test.get("program") is None:
            raise program.Refused("a clean run only runs programs")
        inputs = [_convert(codec.decode_input(a), k, jnp, np)
                  for a, k in zip(test["args"], test["kinds"], strict=True)]
        value, facts = program.run(test["program"], inputs, encode, result_bytes // 2,
                                   result_bytes // 3)
        fields.update(value=value, facts=facts)
        return
    if test.get("export") is None:
        raise program.Refused("a submission's run does not run programs")
    # Tests of the same shapes and static values ask for the same export: traced once.
    key = json.dumps([test["export"], test["args"]], sort_keys=True)
    if key not in _EXPORTED:
        args = [a if _abstract(a) else _convert(codec.decode_input(a), k, jnp, np)
                for a, k in zip(test["args"], test["kinds"], strict=True)]
        _EXPORTED[key] = program.export(entry, test["export"], args, result_bytes * 3 // 4)
    fields["exported"] = _EXPORTED[key]


def _abstract(arg: dict[str, Any]) -> bool:
    """An export argument given as an aval, or a tree (dict, list) with avals in it: the
    export makes ShapeDtypeStructs of it (program.export); anything else is a value."""
    if arg.get("t") == "aval":
        return True
    if arg.get("t") == "dict":
        return any(_abstract(v) for _, v in arg["items"])
    if arg.get("t") in ("list", "tuple"):
        return any(_abstract(v) for v in arg["items"])
    return False


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


def _timed(limits: tuple[float, float], fn: Any, *args: Any) -> Any:
    """``fn(*args)`` stopped by :class:`TimeLimit` once the process has used ``limits[0]``
    seconds of CPU time (all its threads: ``ITIMER_PROF``) or ``limits[1]`` seconds of
    wall-clock time have passed. A courtesy that lets the harness stop cleanly: the
    trusted side measures and enforces the limits itself."""
    cpu, wall = limits
    signal.setitimer(signal.ITIMER_PROF, cpu)
    signal.setitimer(signal.ITIMER_REAL, wall)
    try:
        return fn(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.setitimer(signal.ITIMER_PROF, 0)


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


COMPILE_FLAGS_ENV = "JAXJUDGE_XLA_FLAGS"
_FLAG = re.compile(r"--xla_[a-z0-9_]+=[A-Za-z0-9_.-]+")


def set_xla_flags(compile_flags: str) -> None:
    """``XLA_FLAGS``: the 8 CPU devices, and the judge's compile flags (from the trusted
    side; anything but ``--xla_name=value`` words is ignored). XLA reads them when the
    devices come up, so a zygote's child may still set its own."""
    words = [w for w in compile_flags.split() if _FLAG.fullmatch(w)]
    os.environ["XLA_FLAGS"] = " ".join(
        [f"--xla_force_host_platform_device_count={DEVICE_COUNT}", *words])


def prepare() -> None:
    """What every run shares, before any device is touched: the environment, the signal
    dispositions and the jax and flax imports. The zygote does this once and forks.

    The imports include the MLIR modules JAX loads only on its first lowering (about
    13 ms, found by listing the modules every example of every problem imports after
    this point): imported here, no zygote child pays them in its first call. None of
    them touches a device or starts a thread."""
    set_xla_flags(os.environ.pop(COMPILE_FLAGS_ENV, ""))
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    for sig in (signal.SIGXFSZ, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    signal.signal(signal.SIGALRM, _alarm)
    signal.signal(signal.SIGPROF, _alarm)
    import flax
    import flax.linen  # noqa: F401
    import jax
    import jax.numpy  # noqa: F401
    import jaxlib.mlir.dialects.builtin  # noqa: F401
    import jaxlib.mlir.dialects.mhlo  # noqa: F401
    import jaxlib.mlir.extras.meta  # noqa: F401
    import numpy  # noqa: F401
    from flax import nnx  # noqa: F401

    from judge.harness import codec, integrity  # noqa: F401


def main() -> None:
    """A harness on its own: imports, then serves one submission."""
    t0 = time.perf_counter()
    prepare()
    serve(int(os.environ.get(PROTOCOL_FD_ENV, "1")), t0)


def serve(fd: int, t0: float) -> None:
    """Serve one submission over the protocol (on ``fd`` and standard input), then leave
    the process with ``os._exit``. The imports are done (:func:`prepare`); the devices are
    brought up here, so a zygote can fork before."""
    import flax
    import jax
    import jax.numpy as jnp
    import numpy as np

    from judge.harness import codec, integrity

    protocol_fd = os.dup(fd)
    send = make_sender(protocol_fd)
    devices = len(jax.devices())
    encode = codec.make_encoder()
    inbox = Inbox()
    tripwire = integrity.snapshot(protocol_fd, encode, [send, _timed, _error, _convert])
    send(
        "ready",
        harness_version=HARNESS_VERSION,
        import_ms=(time.perf_counter() - t0) * 1000,
        jax_version=jax.__version__,
        flax_version=flax.__version__,
        devices=devices,
    )

    def leave_if_interfered(index: int | None) -> None:
        """Report tampering and leave, if the tripwire says there was some."""
        try:
            what = tripwire.changed()
        except BaseException:
            what = "the integrity check failed"
        if what is None:
            return
        with contextlib.suppress(BaseException):
            os.write(2, f"jaxjudge harness: {what}\n".encode())
        send("interfered", index=index)
        os._exit(0)

    job = inbox.next()
    if job is None or job.get("op") != "load":
        os._exit(0)  # the supervisor went away
    limits = job["limits"]
    cpu_alarm, wall_alarm = job["alarms"]
    test_limits = (float(cpu_alarm), float(wall_alarm))
    output_bytes = int(limits["output_bytes"])
    result_bytes = int(limits["result_bytes"])
    _lower_limit(resource.RLIMIT_FSIZE, output_bytes + 1)  # a pooled sandbox starts higher
    capture = Capture(int(limits["segment_bytes"]))

    code: str = job["code"]
    clean = job.get("mode") == "programs"  # no submission code: exported programs only
    linecache.cache[FILENAME] = (len(code), None, code.splitlines(True), FILENAME)
    module = types.ModuleType("submission")
    module.__file__ = FILENAME
    sys.modules["submission"] = module
    t_load = time.perf_counter()
    entry: Any = None
    try:
        if not clean:
            compiled = compile(code, FILENAME, "exec")
            _timed(test_limits, exec, compiled, module.__dict__)
            entry = module.__dict__.get(job["entry_point"])
            if not callable(entry):
                raise LookupError(
                    f"the submission defines no function named {job['entry_point']!r}")
    except TimeLimit:
        send("load_timeout", time_ms=(time.perf_counter() - t_load) * 1000, **capture.segment())
        os._exit(0)
    except BaseException as exc:  # SyntaxError, ImportError, SystemExit, ...
        info = _error(exc)
        if isinstance(exc, SyntaxError):  # its str() repeats the file and line
            info.update(message=str(exc.msg)[:MESSAGE_CHARS], line=exc.lineno)
        segment = capture.segment()
        leave_if_interfered(None)
        send("compile_error", error=info, **segment)
        os._exit(0)
    load_ms = (time.perf_counter() - t_load) * 1000
    segment = capture.segment()
    leave_if_interfered(None)
    send("loaded", time_ms=load_ms, **segment)

    # One test at a time: its input arrives only once the previous result is sent.
    for _ in range(int(job["tests"])):
        test = inbox.next()
        if test is None or test.get("op") != "test":
            break
        index = test["index"]
        send("start", index=index)
        fields: dict[str, Any] = {}
        status = "ok"
        t = time.perf_counter()
        elapsed = 0.0
        try:
            if test.get("program") is not None or test.get("export") is not None:
                t = time.perf_counter()
                _timed(test_limits, _probe, test, entry, clean, fields, encode, result_bytes,
                       jnp, np)
                elapsed = time.perf_counter() - t
                raise _Done()
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

            value = _timed(test_limits, call)
            elapsed = time.perf_counter() - t
            leave_if_interfered(index)  # before encoding: the encoder must read an untouched world
            fields["value"] = _timed(
                test_limits, lambda v=value: encode(v, max_bytes=result_bytes)
            )
        except _Done:
            pass
        except program.Refused as exc:
            status, fields["message"] = "refused", str(exc)[:MESSAGE_CHARS]
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
        segment = capture.segment()
        leave_if_interfered(index)  # encoding and flushing may have run the submission's code
        send("result", index=index, status=status, time_ms=elapsed * 1000, **fields, **segment)
        if status in ("output_limit", "timeout"):
            break  # the run is over: the trusted side marks the rest as not run
    send("done")
    os._exit(0)
