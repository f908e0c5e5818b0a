# Runtime error: creates the annotated layers with no mesh set; Flax's eager sharding
# raises "An auto mesh context or metadata is required".
import jax.numpy as jnp
from flax import nnx


def params_per_device(widths, param_dtype, mesh_shapes):
    dtype = jnp.dtype(param_dtype)
    rows = []
    for _data, model in mesh_shapes:
        layers = [
            nnx.Linear(widths[i], widths[i + 1], param_dtype=dtype, rngs=nnx.Rngs(0),
                       kernel_init=nnx.with_partitioning(nnx.initializers.lecun_normal(),
                                                         (None, "model")))
            for i in range(len(widths) - 1)
        ]
        n = sum(layer.kernel.size // model + layer.bias.size for layer in layers)
        rows.append([n, n * dtype.itemsize])
    return rows
