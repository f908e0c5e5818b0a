# Accepted: no annotations at all. Plain layers are created on one device, then each state
# is moved with jax.device_put and a hand-written tree of NamedShardings. The mesh keeps
# jax.make_mesh's default Explicit axes, which is fine here: nothing is constrained inside
# jit, the arrays are only placed.
import jax
from flax import nnx
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def parallel_linears(features, styles, mesh_shape):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"))
    specs = {"column": {"kernel": P(None, "model"), "bias": P("model")},
             "row": {"kernel": P("model", None), "bias": P()}}
    out = []
    for i, style in enumerate(styles):
        layer = nnx.Linear(features[i], features[i + 1], rngs=nnx.Rngs(i))
        params = nnx.state(layer).to_pure_dict()
        shardings = {k: NamedSharding(mesh, p) for k, p in specs[style].items()}
        out.append(jax.device_put(params, shardings))
    return out
