# Wrong: returns a per-device shard shape (features split over the 8 devices), not the
# logical shape that the Partitioned box holds.
import flax.linen as nn
import jax
import jax.numpy as jnp


def with_partitioning_kernel_shape(seed, x, features):
    model = nn.Dense(
        int(features),
        kernel_init=nn.with_partitioning(nn.initializers.lecun_normal(), (None, "model")),
    )
    box = model.init(jax.random.key(int(seed)), x)["params"]["kernel"]
    rows, cols = box.value.shape
    return jnp.array([rows, cols // len(jax.devices())])
