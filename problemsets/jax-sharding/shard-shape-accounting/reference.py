"""Reference: build the real NamedSharding and ask it for the shard shape; when JAX refuses
(IndivisibleError, a ValueError), report the first dimension that does not divide."""

import math

import jax
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def _entry(e):
    # JSON gives lists; a PartitionSpec wants a tuple for "split over several axes".
    return tuple(e) if isinstance(e, list) else e


def shard_shape(shape, mesh_shape, axis_names, spec):
    mesh_shape = tuple(int(s) for s in mesh_shape)
    mesh = jax.make_mesh(mesh_shape, tuple(axis_names),
                         axis_types=(AxisType.Auto,) * len(mesh_shape),
                         devices=jax.devices()[:math.prod(mesh_shape)])
    pspec = P(*[_entry(e) for e in spec])
    sharding = NamedSharding(mesh, pspec)
    shape = tuple(int(d) for d in shape)
    try:
        return np.array(sharding.shard_shape(shape), dtype=np.int64)
    except ValueError:  # jax._src.sharding.IndivisibleError
        pass
    # Which dimension failed: dimension i is cut into the product of the sizes of the mesh
    # axes named in spec entry i (1 for None or a missing trailing entry).
    for i, dim in enumerate(shape):
        entry = pspec[i] if i < len(pspec) else None
        names = () if entry is None else (entry,) if isinstance(entry, str) else entry
        pieces = math.prod(mesh.shape[a] for a in names)
        if dim % pieces:
            return {"error": "not_divisible", "dim": i, "pieces": pieces}
    raise AssertionError("JAX refused a layout that divides evenly")
