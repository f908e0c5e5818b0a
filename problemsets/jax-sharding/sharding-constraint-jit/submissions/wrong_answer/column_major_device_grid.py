# Wrong: lays the devices out column by column (reshape with order="F"). The spec and the
# shard shapes are right, but on a 2-D mesh the devices hold the wrong blocks: device 1
# should hold the second column block of row block 0, here it holds row block 1.
import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P


def constrained_layer(x, w, mesh_shape, axis_names, spec):
    grid = np.array(jax.devices()).reshape(mesh_shape, order="F")
    mesh = Mesh(grid, tuple(axis_names))
    sharding = NamedSharding(mesh, P(*[tuple(e) if isinstance(e, list) else e for e in spec]))

    @jax.jit
    def layer(x, w):
        h = jax.lax.with_sharding_constraint(jax.nn.relu(x @ w), sharding)
        return h * h

    return layer(x, w)
