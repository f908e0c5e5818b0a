# Accepted: creates the annotated layers under jax.set_mesh, so eager sharding places each
# parameter as it is created; the row-parallel bias carries no annotation, which under a
# mesh means replicated (P()). Returns plain nested dicts of the sharded arrays.
import jax
import numpy as np
from flax import nnx
from jax.sharding import Mesh

init, wp = nnx.initializers, nnx.with_partitioning


def make_layer(style, d_in, d_out, rngs):
    if style == "column":
        return nnx.Linear(d_in, d_out,
                          kernel_init=wp(init.lecun_normal(), (None, "model")),
                          bias_init=wp(init.zeros_init(), ("model",)), rngs=rngs)
    return nnx.Linear(d_in, d_out, kernel_init=wp(init.lecun_normal(), ("model", None)),
                      rngs=rngs)


def parallel_linears(features, styles, mesh_shape):
    mesh = Mesh(np.array(jax.devices()).reshape(mesh_shape), ("data", "model"))
    with jax.set_mesh(mesh):
        rngs = nnx.Rngs(42)
        layers = [make_layer(s, a, b, rngs)
                  for s, a, b in zip(styles, features, features[1:])]
    return [nnx.state(layer).to_pure_dict() for layer in layers]
