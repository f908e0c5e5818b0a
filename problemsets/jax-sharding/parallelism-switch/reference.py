"""Reference: for each mesh, trace the annotated MLP's constructor under that mesh with
nnx.eval_shape (eager sharding gives every parameter the NamedSharding a real init would
produce, without drawing a number or compiling) and ask JAX for device 0's shard shape."""

import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx
from jax.sharding import AxisType

DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}


class MLP(nnx.Module):
    """Layers alternate column-parallel (even index) and row-parallel (odd index)."""

    def __init__(self, widths, param_dtype, rngs):
        layers = []
        for i, (d_in, d_out) in enumerate(zip(widths[:-1], widths[1:])):
            if i % 2 == 0:  # column-parallel: output features split, bias split with them
                kernel_spec, bias_spec = (None, "model"), ("model",)
            else:  # row-parallel: input features split, bias added after the all-reduce
                kernel_spec, bias_spec = ("model", None), (None,)
            layers.append(nnx.Linear(
                d_in, d_out, param_dtype=param_dtype, rngs=rngs,
                kernel_init=nnx.with_partitioning(nnx.initializers.lecun_normal(), kernel_spec),
                bias_init=nnx.with_partitioning(nnx.initializers.zeros_init(), bias_spec),
            ))
        self.layers = nnx.List(layers)


def _held_by_one_device(widths, dtype, data, model):
    mesh = jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[: data * model])
    with jax.set_mesh(mesh):
        abstract = nnx.eval_shape(lambda: MLP(widths, dtype, nnx.Rngs(0)))
    elements = nbytes = 0
    for leaf in jax.tree_util.tree_leaves(nnx.state(abstract, nnx.Param)):
        # leaf is a jax.ShapeDtypeStruct whose .sharding is the NamedSharding on this mesh.
        n = math.prod(leaf.sharding.shard_shape(leaf.shape))
        elements += n
        nbytes += n * leaf.dtype.itemsize
    return [elements, nbytes]


def params_per_device(widths, param_dtype, mesh_shapes):
    dtype = DTYPES[param_dtype]
    rows = [_held_by_one_device(list(widths), dtype, d, m) for d, m in mesh_shapes]
    return np.array(rows, dtype=np.int64)
