# Accepted: create the model eagerly under the mesh *and* the logical axis rules, so Flax
# translates every logical annotation into mesh axes as it shards each new parameter.
# (Each initialiser runs as its own small program: about twice the reference's CPU time
# on a fresh mesh.)

import jax
from flax import nnx
from jax.sharding import AxisType

init = nnx.initializers


class FFN(nnx.Module):
    """The model of the statement; its annotations are logical names, not mesh axes."""

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


def _as_rules(rules):
    # JSON gives lists: make each pair a tuple and a list of mesh axes a tuple of axes.
    return tuple((name, tuple(axes) if isinstance(axes, list) else axes) for name, axes in rules)


def logical_sharded_state(rules, sizes, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    # Eager sharding (on by default) shards each parameter as it is created, looking up
    # its logical names in the current rules.
    with jax.set_mesh(mesh), nnx.logical_axis_rules(_as_rules(rules)):
        model = FFN(*sizes, rngs=nnx.Rngs(0))
    return nnx.state(model)
