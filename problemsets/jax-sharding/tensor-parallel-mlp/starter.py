"""A tensor-parallel MLP block: y = relu(x @ w1 + b1) @ w2 + b2 on a ('data', 'model') mesh.

Fill in the TODOs. The first layer should be column-parallel, the second row-parallel.
"""

import jax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

# TODO: one PartitionSpec per input, in the order (x, w1, b1, w2, b2).
IN_SPECS = (
    P(),  # TODO x
    P(),  # TODO w1
    P(),  # TODO b1
    P(),  # TODO w2
    P(),  # TODO b2
)
OUT_SPEC = P()  # TODO: rows split over 'data', complete over 'model'


def mlp_block(x, w1, b1, w2, b2):
    """The block on one device's shards: what must be communicated, and when?"""
    ...


def tensor_parallel_mlp(x, w1, b1, w2, b2, mesh_shape):
    """Build the mesh from mesh_shape, place the inputs and run the block on it.

    Returns a jax.Array of shape (N, out_dim) with sharding P("data", None).
    """
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"))
    ...
