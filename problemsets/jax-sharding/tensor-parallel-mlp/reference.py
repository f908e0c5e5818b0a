"""Reference: a Megatron-style tensor-parallel MLP block with jax.shard_map.

The first layer is column-parallel (each 'model' device owns a slice of the hidden units),
the second row-parallel (the matching rows of w2), so each device ends with a partial sum of
the output; one psum over 'model' completes it, and the output bias is added once, after.
"""

import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

IN_SPECS = (
    P("data", None),   # x: batch split over 'data', copied over 'model'
    P(None, "model"),  # w1: column-parallel, hidden units split over 'model'
    P("model"),        # b1: follows w1's columns
    P("model", None),  # w2: row-parallel, the same hidden units
    P(),               # b2: replicated
)
OUT_SPEC = P("data", None)  # batch split over 'data', complete (replicated) over 'model'


def mlp_block(x, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)              # (batch/data, hidden/model): exact, local
    partial = h @ w2                          # (batch/data, out): a partial sum
    return jax.lax.psum(partial, "model") + b2  # all-reduce, then the bias exactly once


@jax.jit
def tensor_parallel_forward(x, w1, b1, w2, b2):
    # mesh=None: jax.shard_map uses the mesh set by jax.set_mesh.
    return jax.shard_map(mlp_block, in_specs=IN_SPECS, out_specs=OUT_SPEC)(x, w1, b1, w2, b2)


def tensor_parallel_mlp(x, w1, b1, w2, b2, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"))
    args = [jax.device_put(a, NamedSharding(mesh, spec))
            for a, spec in zip((x, w1, b1, w2, b2), IN_SPECS)]
    with jax.set_mesh(mesh):
        return tensor_parallel_forward(*args)
