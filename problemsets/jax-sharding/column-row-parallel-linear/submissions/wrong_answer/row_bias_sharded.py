# Wrong: treats the bias the same way in both styles and also shards the row-parallel
# layer's bias over 'model'. That bias is added after the partial products are summed, on
# the full output vector: it must be replicated.
import jax
from flax import nnx
from jax.sharding import AxisType

init, wp = nnx.initializers, nnx.with_partitioning


def parallel_linears(features, styles, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    rngs = nnx.Rngs(0)
    states = []
    with jax.set_mesh(mesh):
        for style, d_in, d_out in zip(styles, features[:-1], features[1:]):
            kernel = (None, "model") if style == "column" else ("model", None)
            layer = nnx.Linear(d_in, d_out, kernel_init=wp(init.lecun_normal(), kernel),
                               bias_init=wp(init.zeros_init(), ("model",)), rngs=rngs)
            states.append(nnx.state(layer))
    return states
