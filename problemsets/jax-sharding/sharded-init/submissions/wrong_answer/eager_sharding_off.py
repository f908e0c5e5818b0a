# Wrong: turns eager sharding off to get past "An auto mesh context ... is required" and
# creates the model eagerly; the annotations become metadata only and every parameter is
# returned whole on device 0 (a SingleDeviceSharding, not the mesh).
import jax
from flax import nnx

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
    with nnx.use_eager_sharding(False):
        model = MLP(*sizes, rngs=nnx.Rngs(seed))
    return nnx.state(model)
