# Wrong: ignores `styles` and hard-codes the Megatron MLP pattern (even layers column,
# odd layers row). Right for column/row pairs, wrong as soon as a layer breaks the pattern.
import jax
from flax import nnx
from jax.sharding import AxisType

init, wp = nnx.initializers, nnx.with_partitioning


def parallel_linears(features, styles, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    rngs = nnx.Rngs(0)
    states = []
    with jax.set_mesh(mesh):
        for i in range(len(features) - 1):
            if i % 2 == 0:
                kernel, bias = (None, "model"), ("model",)
            else:
                kernel, bias = ("model", None), (None,)
            layer = nnx.Linear(features[i], features[i + 1],
                               kernel_init=wp(init.lecun_normal(), kernel),
                               bias_init=wp(init.zeros_init(), bias), rngs=rngs)
            states.append(nnx.state(layer))
    return states
