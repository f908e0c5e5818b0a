# Wrong: traces the model once, under the first mesh, and reports its shards for every
# mesh; the sharding is fixed when parameters are created, so each mesh needs its own model.
import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax.sharding import AxisType


def _mlp(widths, dtype):
    layers = []
    for i in range(len(widths) - 1):
        col = i % 2 == 0
        layers.append(nnx.Linear(
            widths[i], widths[i + 1], param_dtype=dtype, rngs=nnx.Rngs(0),
            kernel_init=nnx.with_partitioning(
                nnx.initializers.lecun_normal(), (None, "model") if col else ("model", None)),
            bias_init=nnx.with_partitioning(
                nnx.initializers.zeros_init(), ("model",) if col else (None,)),
        ))
    return nnx.Sequential(*layers)


def params_per_device(widths, param_dtype, mesh_shapes):
    dtype = jnp.dtype(param_dtype)
    data, model = mesh_shapes[0]
    mesh = jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[: data * model])
    with jax.set_mesh(mesh):
        abstract = nnx.eval_shape(lambda: _mlp(widths, dtype))
    leaves = jax.tree_util.tree_leaves(nnx.state(abstract))
    n = sum(math.prod(leaf.sharding.shard_shape(leaf.shape)) for leaf in leaves)
    return np.array([[n, n * dtype.itemsize] for _ in mesh_shapes])  # BUG: same row for all
