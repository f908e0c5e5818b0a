# Wrong: takes in_dim from x.size (N * in_dim) instead of x.shape[-1].
import jax.numpy as jnp


def with_partitioning_kernel_shape(seed, x, features):
    return jnp.array([x.size, int(features)])
