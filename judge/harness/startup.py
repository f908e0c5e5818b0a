"""What every run of the harness shares, before any device is touched.

:func:`prepare` sets the environment (:func:`set_xla_flags`: the 8 CPU devices and the
judge's compile flags), the signal dispositions (the alarms of :mod:`judge.harness.limits`)
and imports jax, flax and the harness's own modules. A harness on its own does it and then
serves (:func:`judge.harness.runner.main`); the zygote does it once and forks
(:mod:`judge.harness.zygote`), and each child may still set its own compile flags: XLA reads
them only when the devices come up.
"""

from __future__ import annotations

import os
import re
import signal

from judge.harness.limits import alarm

DEVICE_COUNT = 8
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
    dispositions and the imports (jax, flax and the harness's own modules). The zygote
    does this once and forks.

    The imports include the MLIR modules JAX loads only on its first lowering (about
    13 ms, found by listing the modules every example of every problem imports after
    this point): imported here, no zygote child pays them in its first call. None of
    them touches a device or starts a thread."""
    set_xla_flags(os.environ.pop(COMPILE_FLAGS_ENV, ""))
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    for sig in (signal.SIGXFSZ, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    signal.signal(signal.SIGALRM, alarm)
    signal.signal(signal.SIGPROF, alarm)
    import flax
    import flax.linen  # noqa: F401
    import jax
    import jax.numpy  # noqa: F401
    import jaxlib.mlir.dialects.builtin  # noqa: F401
    import jaxlib.mlir.dialects.mhlo  # noqa: F401
    import jaxlib.mlir.extras.meta  # noqa: F401
    import numpy  # noqa: F401
    from flax import nnx  # noqa: F401

    from judge.harness import codec, inputs, integrity, probe  # noqa: F401

