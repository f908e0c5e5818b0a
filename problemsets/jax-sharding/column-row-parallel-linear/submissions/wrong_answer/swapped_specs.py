# Wrong: swaps the two styles' kernel specs: "column" gets ('model', None), which splits
# the kernel's rows (its input features), and "row" gets (None, 'model').
import jax
from flax import nnx
from jax.sharding import AxisType

init, wp = nnx.initializers, nnx.with_partitioning
SPECS = {"column": (("model", None), ("model",)), "row": ((None, "model"), (None,))}


def parallel_linears(features, styles, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    rngs = nnx.Rngs(0)
    states = []
    with jax.set_mesh(mesh):
        for style, d_in, d_out in zip(styles, features[:-1], features[1:]):
            kernel, bias = SPECS[style]
            layer = nnx.Linear(d_in, d_out, kernel_init=wp(init.lecun_normal(), kernel),
                               bias_init=wp(init.zeros_init(), bias), rngs=rngs)
            states.append(nnx.state(layer))
    return states
