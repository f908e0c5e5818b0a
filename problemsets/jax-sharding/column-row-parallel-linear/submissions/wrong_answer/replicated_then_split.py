# Wrong (right layouts, wrong computation): places every layer on every device first
# ("replicated, to be safe"), then moves it to its real layout. The layouts returned are
# right; compiled as one program, every device creates every layer whole: 7.7-14.8x the
# reference's temporary memory per device on the wide tests (probe 'compiled-layers').
import jax
from flax import nnx
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

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
        with nnx.use_eager_sharding(False):
            layer = nnx.Linear(
                d_in, d_out,
                kernel_init=nnx.with_partitioning(nnx.initializers.lecun_normal(), kernel_spec),
                bias_init=nnx.with_partitioning(nnx.initializers.zeros_init(), bias_spec),
                rngs=rngs,
            )
        state = nnx.state(layer)
        everywhere = jax.device_put(state, NamedSharding(mesh, P()))
        states.append(jax.device_put(everywhere, nnx.get_named_sharding(state, mesh)))
    return states
