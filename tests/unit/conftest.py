"""Shared helpers and fixtures of the unit tests.

``wire_value`` sends a value the way a result travels: encoded by the harness's codec, written
as one JSON line (as ``judge.harness.channel.make_sender`` writes it), parsed and validated on
the trusted side (as ``judge.sandbox.supervisor`` does).
"""

from __future__ import annotations

import json
from typing import Any

import jax
import numpy as np
import pytest
from jax.sharding import Mesh
from pydantic import TypeAdapter

from judge.harness.codec import encode
from judge.values import Value

VALUE = TypeAdapter(Value)


def to_json(enc: dict[str, Any]) -> str:
    return json.dumps(enc, separators=(",", ":"), allow_nan=False)


def wire_value(value: Any, **limits: Any) -> Any:
    return VALUE.validate_python(json.loads(to_json(encode(value, **limits))))


@pytest.fixture(scope="session")
def mesh() -> Mesh:
    assert len(jax.devices()) == 8, "tests/conftest.py must give jax 8 CPU devices"
    return Mesh(np.array(jax.devices()).reshape(2, 4), ("data", "model"))
