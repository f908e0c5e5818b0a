# Accepted: passes the rules with each annotation (with_partitioning(..., sharding_rules=...))
# instead of setting a logical_axis_rules context; eager sharding applies them at creation.
import jax
from flax import nnx
from jax.sharding import AxisType

init = nnx.initializers


class FFN(nnx.Module):
    def __init__(self, vocab, embed, hidden, rules, *, rngs):
        def part(initializer, names):
            return nnx.with_partitioning(initializer, names, sharding_rules=rules)

        self.embed = nnx.Embed(vocab, embed, embedding_init=part(
            init.variance_scaling(1.0, "fan_in", "normal", out_axis=0), ("vocab", "embed")),
            rngs=rngs)
        self.up = nnx.Linear(embed, hidden,
            kernel_init=part(init.lecun_normal(), ("embed", "hidden")),
            bias_init=part(init.normal(0.02), ("hidden",)), rngs=rngs)
        self.down = nnx.Linear(hidden, embed,
            kernel_init=part(init.lecun_normal(), ("hidden", "embed")),
            bias_init=part(init.normal(0.02), ("embed",)), rngs=rngs)


def logical_sharded_state(rules, sizes, mesh_shape):
    rules = [(name, tuple(t) if isinstance(t, list) else t) for name, t in rules]
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    with jax.set_mesh(mesh):
        model = FFN(*sizes, rules, rngs=nnx.Rngs(0))
    return nnx.state(model).to_pure_dict()
