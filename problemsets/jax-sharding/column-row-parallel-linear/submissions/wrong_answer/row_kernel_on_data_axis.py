# Wrong: reads "row-parallel" as "rows over the data axis" and annotates the row-parallel
# kernel ('data', None). Tensor parallelism splits weights over 'model'; 'data' is the
# axis the batch is split over, and weights are replicated along it.
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
            if style == "column":
                kernel, bias = (None, "model"), ("model",)
            else:
                kernel, bias = ("data", None), (None,)
            layer = nnx.Linear(d_in, d_out, kernel_init=wp(init.lecun_normal(), kernel),
                               bias_init=wp(init.zeros_init(), bias), rngs=rngs)
            states.append(nnx.state(layer))
    return states
