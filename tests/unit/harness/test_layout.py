"""judge.harness.layout: which slice of an array each device holds, computed without JAX,
must be what JAX itself says; and judge.values refuses arrays whose buffers do not fit."""

from __future__ import annotations

import math
from typing import Any

import jax
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax._src.named_sharding import DuplicateSpecError
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P
from pydantic import ValidationError

from judge.harness.codec import encode
from judge.harness.layout import Index, LayoutError, shard_indices, shard_shape

from ..conftest import VALUE

MESH_SHAPES = [(8,), (2, 4), (4, 2), (2, 2, 2), (1, 8), (8, 1)]
AXES = ("x", "y", "z")


def jax_indices(mesh: Mesh, spec: P, shape: tuple[int, ...]) -> dict[int, Index]:
    """JAX's own answer, as device id -> ``(start, stop)`` of every dimension."""
    return {
        device.id: tuple(sl.indices(n)[:2] for sl, n in zip(index, shape, strict=True))
        for device, index in NamedSharding(mesh, spec).devices_indices_map(shape).items()
    }


def wire_spec(spec: P) -> list[Any]:
    return encode(spec)["v"]


@st.composite
def layouts(draw: st.DrawFn) -> tuple[Mesh, P, tuple[int, ...]]:
    """A mesh of the 8 devices in some order and shape, a spec over its axes (each entry
    None, one axis or a tuple of distinct axes; no axis twice) and a shape it divides,
    with trailing dimensions the spec does not name."""
    mesh_shape = draw(st.sampled_from(MESH_SHAPES))
    axes = AXES[: len(mesh_shape)]
    order = draw(st.permutations(range(8)))
    mesh = Mesh(np.array(jax.devices())[list(order)].reshape(mesh_shape), axes)
    sizes = dict(zip(axes, mesh_shape, strict=True))
    free = list(draw(st.permutations(axes)))
    entries: list[Any] = []
    shape: list[int] = []
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["none", "axis", "tuple"]))
        names: tuple[str, ...] = ()
        if kind == "axis" and free:
            names = (free.pop(),)
            entries.append(names[0])
        elif kind == "tuple" and free:
            names = tuple(free[: draw(st.integers(1, len(free)))])
            del free[: len(names)]
            entries.append(names)
        else:
            entries.append(None)
        shape.append(math.prod(sizes[n] for n in names) * draw(st.integers(0, 3)))
    shape += draw(st.lists(st.integers(0, 5), max_size=2))  # not named by the spec
    return mesh, P(*entries), tuple(shape)


@settings(max_examples=300, deadline=None)
@given(layouts())
def test_shard_indices_are_jax_s(layout: tuple[Mesh, P, tuple[int, ...]]) -> None:
    mesh, spec, shape = layout
    ids = [d.id for d in mesh.devices.flat]
    mine = shard_indices(wire_spec(spec), list(mesh.axis_names), list(mesh.devices.shape),
                         ids, list(shape))
    assert mine == jax_indices(mesh, spec, shape)
    # and every device's shard has the shape JAX gives it
    shard = NamedSharding(mesh, spec).shard_shape(shape)
    assert {shard_shape(index) for index in mine.values()} == {shard}


def test_0d_arrays_and_fully_replicated_arrays() -> None:
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
    ids = [d.id for d in mesh.devices.flat]
    assert shard_indices([], ["x", "y"], [2, 4], ids, []) == {d: () for d in range(8)}
    assert shard_indices([], ["x", "y"], [2, 4], ids, []) == jax_indices(mesh, P(), ())
    whole = ((0, 3), (0, 5))
    assert shard_indices([None], ["x", "y"], [2, 4], ids, [3, 5]) == {d: whole for d in ids}


def test_a_tuple_entry_is_split_major_axis_first() -> None:
    # P(('y', 'x')) on x=2, y=4: block = 2 * coord(y) + coord(x)
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
    mine = shard_indices([["y", "x"]], ["x", "y"], [2, 4], list(range(8)), [16])
    assert mine[1] == ((4, 6),)  # device 1 sits at x=0, y=1
    assert mine[4] == ((2, 4),)  # device 4 sits at x=1, y=0
    assert mine == jax_indices(mesh, P(("y", "x")), (16,))


IMPOSSIBLE_SPECS = [  # on the mesh x=2, y=4
    pytest.param(["z"], [8, 8], id="unknown-axis"),
    pytest.param(["x", "x"], [8, 8], id="axis-twice"),
    pytest.param([["x", "y"], "x"], [8, 8], id="axis-twice-in-a-tuple"),
    pytest.param([["y", "y"]], [16], id="axis-twice-in-one-entry"),
    pytest.param(["x"], [3], id="split-not-dividing"),
    pytest.param([None, ["x", "y"]], [8, 12], id="tuple-split-not-dividing"),
    pytest.param(["x", None], [8], id="spec-longer-than-ndim"),
    pytest.param(["x"], [], id="spec-on-a-0d-array"),
]


@pytest.mark.parametrize("spec, shape", IMPOSSIBLE_SPECS)
def test_impossible_specs_raise_as_jax_refuses_them(spec: list[Any], shape: list[int]) -> None:
    with pytest.raises(LayoutError):
        shard_indices(spec, ["x", "y"], [2, 4], list(range(8)), shape)
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))
    jax_spec = P(*(tuple(e) if isinstance(e, list) else e for e in spec))
    with pytest.raises((ValueError, DuplicateSpecError)):  # no array can have such a layout
        jax.device_put(np.zeros(shape, np.float32), NamedSharding(mesh, jax_spec))


@pytest.mark.parametrize(
    "axes, mesh_shape, devices",
    [
        pytest.param(["x", "y"], [2, 4], list(range(7)), id="too-few-devices"),
        pytest.param(["x", "y"], [2, 4], list(range(9)), id="too-many-devices"),
        pytest.param(["x", "y"], [2, 4], [0, 1, 2, 3, 4, 5, 6, 6], id="duplicate-device"),
        pytest.param(["x"], [2, 4], list(range(8)), id="fewer-names-than-sizes"),
        pytest.param(["x", "x"], [2, 4], list(range(8)), id="axis-name-twice"),
        pytest.param(["x", "y"], [0, 4], [], id="size-0-axis"),
    ],
)
def test_impossible_meshes_raise(axes: list[str], mesh_shape: list[int],
                                 devices: list[int]) -> None:
    with pytest.raises(LayoutError):
        shard_indices(["x"], axes, mesh_shape, devices, [8])


# -- judge.values refuses buffers that do not fit the layout ------------------------------


@pytest.fixture(scope="module")
def sharded() -> dict[str, Any]:
    """A real (8, 8) array split P('data', 'model') on a 2x4 mesh, as the sandbox sends it."""
    mesh = Mesh(np.array(jax.devices()).reshape(2, 4), ("data", "model"))
    x = jax.device_put(np.arange(64, dtype=np.float32).reshape(8, 8),
                       NamedSharding(mesh, P("data", "model")))
    return encode(x)


def edited(value: dict[str, Any], edit: str) -> dict[str, Any]:
    data: dict[str, Any] = {**value, "sharding": {**value["sharding"]}}
    info = data["sharding"]
    buffers = info["buffers"] = [dict(b) for b in info["buffers"]]
    if edit == "wrong-buffer-shape":
        buffers[3]["shape"] = [4, 1]
    elif edit == "missing-device":
        del buffers[7]
    elif edit == "extra-device":
        buffers.append({"device": 8, "shape": [4, 2]})
    elif edit == "two-buffers-on-one-device":
        buffers[1]["device"] = 0
    elif edit == "buffers-and-shards":
        info["shards"] = [{"device": b["device"], "shape": b["shape"]} for b in buffers]
    elif edit == "no-mesh-devices":
        del info["mesh_devices"]
    elif edit == "mesh-device-twice":
        info["mesh_devices"] = [0, 1, 2, 3, 4, 5, 6, 6]
    elif edit == "unknown-axis":
        info["spec"] = ["data", "LEAK"]
    elif edit == "single-device-with-eight-buffers":
        data["sharding"] = {"kind": "SingleDeviceSharding", "buffers": buffers}
    else:
        raise AssertionError(edit)
    return data


def test_the_unedited_array_validates(sharded: dict[str, Any]) -> None:
    value = VALUE.validate_python(sharded)
    assert sorted(value.shards()) == list(range(8))
    assert all(s.shape == [4, 2] for s in value.shards().values())


@pytest.mark.parametrize(
    "edit",
    ["wrong-buffer-shape", "missing-device", "extra-device", "two-buffers-on-one-device",
     "buffers-and-shards", "no-mesh-devices", "mesh-device-twice", "unknown-axis",
     "single-device-with-eight-buffers"],
)
def test_buffers_that_do_not_fit_the_layout_are_refused(sharded: dict[str, Any],
                                                        edit: str) -> None:
    with pytest.raises(ValidationError):
        VALUE.validate_python(edited(sharded, edit))
