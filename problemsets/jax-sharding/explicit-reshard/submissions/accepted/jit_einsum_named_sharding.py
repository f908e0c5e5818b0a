# Accepted: places the inputs with NamedShardings (no mesh context needed for that), then
# runs the product as a jitted einsum with out_sharding under jax.set_mesh.
import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def explicit_matmul(x, w, mesh_shape, x_spec, w_spec, out_spec):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"))
    spec = lambda s: P(*[tuple(e) if isinstance(e, list) else e for e in s])
    x = jax.device_put(x, NamedSharding(mesh, spec(x_spec)))
    w = jax.device_put(w, NamedSharding(mesh, spec(w_spec)))
    out = spec(out_spec)
    with jax.set_mesh(mesh):
        y = jax.jit(lambda a, b: jnp.einsum("nk,km->nm", a, b, out_sharding=out))(x, w)
    return (x, w, y)
