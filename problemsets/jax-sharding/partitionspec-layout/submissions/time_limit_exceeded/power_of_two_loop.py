# Time limit: assumes device counts are powers of two; the doubling loop never ends for 3 devices.
import jax.numpy as jnp


def partitionspec_layout(num_devices, kernel_in, kernel_out):
    n, k_in, k_out = int(num_devices), int(kernel_in), int(kernel_out)
    shards, width = 1, k_out
    while shards != n:
        shards *= 2
        width //= 2
    return jnp.array([k_in, width])
