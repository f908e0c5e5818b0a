# Wrong (right numbers, right layout, wrong computation): compiles the init, but with
# every parameter replicated (each device draws the whole model), then splits the result
# with device_put. The values and the final layout match; the compiled program draws
# every parameter whole on every device: 14x the reference's temporary memory per device
# on the wide 1x8 sample, which the probe 'compiled-init' refuses.
import jax
from flax import nnx
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

init = nnx.initializers


class MLP(nnx.Module):
    def __init__(self, d_in, d_hidden, d_out, *, rngs):
        self.up = nnx.Linear(d_in, d_hidden,
            kernel_init=nnx.with_partitioning(init.lecun_normal(), (None, "model")),
            bias_init=nnx.with_partitioning(init.normal(0.02), ("model",)), rngs=rngs)
        self.down = nnx.Linear(d_hidden, d_out,
            kernel_init=nnx.with_partitioning(init.lecun_normal(), ("model", None)),
            bias_init=nnx.with_partitioning(init.normal(0.02), (None,)), rngs=rngs)


def sharded_init(seed, sizes, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"), axis_types=(AxisType.Auto,) * 2)

    def create():
        with nnx.use_eager_sharding(False):
            return nnx.state(MLP(*sizes, rngs=nnx.Rngs(seed)))

    whole = jax.jit(create, out_shardings=NamedSharding(mesh, P()))()
    return jax.device_put(whole, nnx.get_named_sharding(whole, mesh))
