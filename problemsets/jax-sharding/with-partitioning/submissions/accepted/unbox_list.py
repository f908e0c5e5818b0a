# Accepted: nn.unbox strips the Partitioned boxes; reads the plain kernel's shape, as a list.
import flax.linen as nn
import jax


def with_partitioning_kernel_shape(seed, x, features):
    model = nn.Dense(
        int(features),
        kernel_init=nn.with_partitioning(nn.initializers.lecun_normal(), (None, "model")),
    )
    params = nn.unbox(model.init(jax.random.key(int(seed)), x))["params"]
    return list(params["kernel"].shape)
