"""startup: what a harness does before the devices come up (a zygote does it once, then
forks)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from judge.harness import startup

ROOT = Path(__file__).resolve().parents[3]

# In a fresh interpreter: prepare(), then JAX's first lowering and compile, reporting the
# threads and backends before the devices came up and the modules the call imported.
PROBE = """
import json, sys, threading
from judge.harness import startup
startup.prepare()
from jax._src import xla_bridge
before = {"threads": threading.active_count(), "backends": list(xla_bridge._backends)}
known = set(sys.modules)
import jax.numpy as jnp
jnp.array((1, 2), dtype=jnp.int32).block_until_ready()
print(json.dumps({**before, "imported": sorted(set(sys.modules) - known)}))
"""


def test_prepare_imports_what_the_first_lowering_needs_and_touches_no_device() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, check=True).stdout
    probe = json.loads(out.splitlines()[-1])
    # A zygote forks after prepare(): no backend and no thread of JAX's may exist yet.
    assert probe["threads"] == 1
    assert probe["backends"] == []
    # Nothing of jax's or jaxlib's is left to import in a child's first call.
    assert [m for m in probe["imported"] if m.split(".")[0] in ("jax", "jaxlib")] == []


def test_compile_flags_keep_the_devices_and_drop_anything_but_xla_flags(monkeypatch) -> None:
    monkeypatch.setenv("XLA_FLAGS", "")
    startup.set_xla_flags("--xla_backend_optimization_level=0 ; rm -rf / --xla_bad=a$b "
                          "--not_xla=1 --xla_llvm_disable_expensive_passes=true")
    assert os.environ["XLA_FLAGS"].split() == [
        "--xla_force_host_platform_device_count=8", "--xla_backend_optimization_level=0",
        "--xla_llvm_disable_expensive_passes=true"]
