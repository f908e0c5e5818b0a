# Wrong answer: the right keys and the right random numbers, but the dropout mask is
# pulled onto the host (np.asarray) and applied with np.where: called directly it gives
# the right numbers, and it cannot be traced, so the judge's jax.jit of the function
# (probe 'traced') fails.
import jax
import numpy as np


def noisy_forward(key, x, n_layers):
    x = np.asarray(x)
    for i in range(n_layers):
        k_noise, k_drop = jax.random.split(jax.random.fold_in(key, i))
        x = x + 0.1 * np.asarray(jax.random.normal(k_noise, x.shape))
        keep = np.asarray(jax.random.bernoulli(k_drop, 0.9, x.shape))
        x = np.where(keep, x / np.float32(0.9), np.float32(0.0))
    return x
