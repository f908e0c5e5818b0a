# Runtime error: ignores the rules and creates the model under the mesh alone; Flax passes
# the logical names through as mesh axes and JAX finds no axis "vocab" in the mesh.
import jax
from flax import nnx
from jax.sharding import AxisType

init = nnx.initializers


class FFN(nnx.Module):
    def __init__(self, vocab, embed, hidden, *, rngs):
        self.embed = nnx.Embed(
            vocab, embed,
            embedding_init=nnx.with_partitioning(
                init.variance_scaling(1.0, "fan_in", "normal", out_axis=0), ("vocab", "embed")),
            rngs=rngs,
        )
        self.up = nnx.Linear(
            embed, hidden,
            kernel_init=nnx.with_partitioning(init.lecun_normal(), ("embed", "hidden")),
            bias_init=nnx.with_partitioning(init.normal(0.02), ("hidden",)),
            rngs=rngs,
        )
        self.down = nnx.Linear(
            hidden, embed,
            kernel_init=nnx.with_partitioning(init.lecun_normal(), ("hidden", "embed")),
            bias_init=nnx.with_partitioning(init.normal(0.02), ("embed",)),
            rngs=rngs,
        )


def logical_sharded_state(rules, sizes, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    with jax.set_mesh(mesh):
        model = FFN(*sizes, rngs=nnx.Rngs(0))
    return nnx.state(model)
