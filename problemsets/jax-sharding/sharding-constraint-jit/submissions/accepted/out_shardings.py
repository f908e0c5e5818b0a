# Accepted (another route to the same layout): no constraint inside the function; the
# layout is requested for jit's output with out_shardings. The square is elementwise, so
# the hidden activation and the result share that layout. Meshes built with Mesh() have
# Auto axes.
import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P


def constrained_layer(x, w, mesh_shape, axis_names, spec):
    mesh = Mesh(np.array(jax.devices()).reshape(mesh_shape), tuple(axis_names))
    entries = [tuple(e) if isinstance(e, list) else e for e in spec]
    out = NamedSharding(mesh, P(*entries))
    return jax.jit(lambda x, w: jax.nn.relu(x @ w) ** 2, out_shardings=out)(x, w)
