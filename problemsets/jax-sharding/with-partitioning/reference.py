"""Reference: initialise the annotated Linen Dense and read the Partitioned box."""

import flax.linen as nn
import jax
import jax.numpy as jnp


def with_partitioning_kernel_shape(seed, x, features):
    model = nn.Dense(
        int(features),
        kernel_init=nn.with_partitioning(nn.initializers.lecun_normal(), (None, "model")),
    )
    variables = model.init(jax.random.key(int(seed)), x)
    box = variables["params"]["kernel"]
    assert isinstance(box, nn.Partitioned) and box.names == (None, "model")
    return jnp.array(box.value.shape, dtype=jnp.int32)
