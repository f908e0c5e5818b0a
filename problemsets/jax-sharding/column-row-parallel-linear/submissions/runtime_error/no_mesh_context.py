# Runtime error: creates annotated layers with no mesh context. Eager sharding (on by
# default in flax 0.12) needs a mesh to place the parameters and raises "An auto mesh
# context or metadata is required".
import jax
from flax import nnx
from jax.sharding import AxisType

init, wp = nnx.initializers, nnx.with_partitioning


def parallel_linears(features, styles, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    del mesh  # built, but never made current with jax.set_mesh
    rngs = nnx.Rngs(0)
    states = []
    for style, d_in, d_out in zip(styles, features[:-1], features[1:]):
        if style == "column":
            kernel, bias = (None, "model"), ("model",)
        else:
            kernel, bias = ("model", None), (None,)
        layer = nnx.Linear(d_in, d_out, kernel_init=wp(init.lecun_normal(), kernel),
                           bias_init=wp(init.zeros_init(), bias), rngs=rngs)
        states.append(nnx.state(layer))
    return states
