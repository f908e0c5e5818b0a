"""The harness's main loop (see the package docstring for the protocol).

Everything here runs in the sandbox next to the submission, so nothing in it is trusted
by the other side: the harness reports what the submission returned and how long it took
by its own clock, and the trusted side counts the sandbox's CPU time and wall-clock time
itself and decides every verdict. The harness's own alarms (CPU time, wall clock) only let
it stop a call cleanly, a little past the limits. The harness holds as little as it can: the submission's code and
limits, then one test's inputs at a time (never an expected output, never a later test's
inputs), and what it uses to encode results and write protocol lines is bound before the
submission loads and watched by :mod:`judge.harness.integrity`.

:func:`serve` is the loop; each of its parts is a module: the protocol's two ends
(:mod:`judge.harness.channel`), the captured output (:mod:`judge.harness.capture`), the
alarms (:mod:`judge.harness.limits`), the submission's module and exceptions
(:mod:`judge.harness.submission`), a test's inputs (:mod:`judge.harness.inputs`), a
probe's step (:mod:`judge.harness.probe`) and the encoder (:mod:`judge.harness.codec`).
What runs before the devices come up is :mod:`judge.harness.startup`.
"""

from __future__ import annotations

import contextlib
import os
import resource
import time
from typing import Any

from judge.harness import HARNESS_VERSION, PROTOCOL_FD_ENV, program, startup, submission
from judge.harness.capture import Capture
from judge.harness.channel import Inbox, make_sender
from judge.harness.limits import TimeLimit, lower_limit, timed


class _Done(Exception):
    """A probe's step finished; its fields are filled in."""


def main() -> None:
    """A harness on its own: imports, then serves one submission."""
    t0 = time.perf_counter()
    startup.prepare()
    serve(int(os.environ.get(PROTOCOL_FD_ENV, "1")), t0)


def serve(fd: int, t0: float) -> None:
    """Serve one submission over the protocol (on ``fd`` and standard input), then leave
    the process with ``os._exit``. The imports are done (:func:`prepare`); the devices are
    brought up here, so a zygote can fork before."""
    import flax
    import jax
    import jax.numpy as jnp
    import numpy as np

    from judge.harness import codec, inputs, integrity, probe

    protocol_fd = os.dup(fd)
    send = make_sender(protocol_fd)
    devices = len(jax.devices())
    encode = codec.make_encoder()
    inbox = Inbox()
    tripwire = integrity.snapshot(protocol_fd, encode,
                                  [send, timed, submission.describe_error, inputs.convert])
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
    lower_limit(resource.RLIMIT_FSIZE, output_bytes + 1)  # a pooled sandbox starts higher
    capture = Capture(int(limits["segment_bytes"]))

    code: str = job["code"]
    clean = job.get("mode") == "programs"  # no submission code: exported programs only
    module = submission.new_module(code)
    t_load = time.perf_counter()
    entry: Any = None
    try:
        if not clean:
            entry = submission.load(module, code, job["entry_point"], test_limits)
    except TimeLimit:
        send("load_timeout", time_ms=(time.perf_counter() - t_load) * 1000, **capture.segment())
        os._exit(0)
    except BaseException as exc:  # SyntaxError, ImportError, SystemExit, ...
        info = submission.describe_error(exc)
        if isinstance(exc, SyntaxError):  # its str() repeats the file and line
            info.update(message=str(exc.msg)[:submission.MESSAGE_CHARS], line=exc.lineno)
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
                timed(test_limits, probe.step, test, entry, clean, fields, encode, result_bytes,
                      jnp, np)
                elapsed = time.perf_counter() - t
                raise _Done()
            args = inputs.arguments(test, jnp, np)
            t = time.perf_counter()

            def call(args: list[Any] = args) -> Any:
                out = entry(*args)
                with contextlib.suppress(Exception):
                    jax.block_until_ready(out)
                return out

            value = timed(test_limits, call)
            elapsed = time.perf_counter() - t
            leave_if_interfered(index)  # before encoding: the encoder must read an untouched world
            fields["value"] = timed(
                test_limits, lambda v=value: encode(v, max_bytes=result_bytes)
            )
        except _Done:
            pass
        except program.Refused as exc:
            status, fields["message"] = "refused", str(exc)[:submission.MESSAGE_CHARS]
        except TimeLimit:
            status = "timeout"
        except codec.EncodeLimit as exc:
            status, fields["message"] = "output_limit", f"the return value is too large: {exc}"
        except BaseException as exc:
            status = "memory" if submission.is_memory_error(exc) else "error"
            fields["error"] = submission.describe_error(exc)
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
