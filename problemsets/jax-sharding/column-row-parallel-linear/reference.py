"""Reference: annotate each nnx.Linear with nnx.with_partitioning, create it with eager
sharding off, then place its state on the mesh with the NamedShardings that the
annotations describe (nnx.get_named_sharding + jax.device_put)."""

import jax
from flax import nnx
from jax.sharding import AxisType

# (kernel, bias) partitioning per style. The column-parallel layer splits its output
# features, so kernel columns and bias are split together; the row-parallel layer splits
# its input features (kernel rows), and its bias is added once, after the partial sums are
# reduced: replicated.
SPECS = {
    "column": ((None, "model"), ("model",)),
    "row": (("model", None), (None,)),
}


def parallel_linears(features, styles, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    rngs = nnx.Rngs(0)
    states = []
    for style, d_in, d_out in zip(styles, features[:-1], features[1:]):
        kernel_spec, bias_spec = SPECS[style]
        # Eager sharding off: the layer is created on one device, annotations kept as metadata.
        with nnx.use_eager_sharding(False):
            layer = nnx.Linear(
                d_in, d_out,
                kernel_init=nnx.with_partitioning(nnx.initializers.lecun_normal(), kernel_spec),
                bias_init=nnx.with_partitioning(nnx.initializers.zeros_init(), bias_spec),
                rngs=rngs,
            )
        state = nnx.state(layer)
        # One NamedSharding per parameter, read from the annotations; device_put moves the
        # arrays (no compilation needed, unlike a jitted sharded init).
        states.append(jax.device_put(state, nnx.get_named_sharding(state, mesh)))
    return states
