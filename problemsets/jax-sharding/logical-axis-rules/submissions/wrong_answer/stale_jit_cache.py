# Wrong: a module-level jitted constructor with only the sizes static. The rules are read
# while tracing, and a new rule set does not change the cache key, so a later call with the
# same sizes and mesh returns the layout of the rules it was first traced with.
from functools import partial

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


@partial(nnx.jit, static_argnums=(0,))
def _create(sizes):
    return FFN(*sizes, rngs=nnx.Rngs(0))


def logical_sharded_state(rules, sizes, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    with jax.set_mesh(mesh), nnx.logical_axis_rules(rules):
        model = _create(tuple(sizes))
    return nnx.state(model)
