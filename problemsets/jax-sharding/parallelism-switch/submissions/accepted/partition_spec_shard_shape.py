# Accepted: builds the annotated MLP abstractly once with eager sharding off, reads its spec
# tree with nnx.get_partition_spec, then for every mesh asks NamedSharding.shard_shape.
import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax.sharding import AxisType, Mesh, NamedSharding


def _make(widths, dtype):
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
    with nnx.use_eager_sharding(False):
        abstract = nnx.eval_shape(lambda: _make(widths, dtype))
    state = nnx.state(abstract, nnx.Param)
    shapes = jax.tree_util.tree_leaves(state)
    specs = jax.tree_util.tree_leaves(nnx.get_partition_spec(state))
    out = []
    for data, model in mesh_shapes:
        devices = np.array(jax.devices()[: data * model]).reshape(data, model)
        mesh = Mesh(devices, ("data", "model"), axis_types=(AxisType.Auto,) * 2)
        n = sum(math.prod(NamedSharding(mesh, spec).shard_shape(leaf.shape))
                for leaf, spec in zip(shapes, specs))
        out.append((n, n * dtype.itemsize))
    return np.array(out)
