"""Reference: layer i derives its own key with fold_in(key, i), independent of how many
layers there are, and splits it into one key for the noise and one for the dropout mask,
so that no key is ever used twice."""

import jax
import jax.numpy as jnp


def noisy_forward(key, x, n_layers):
    for i in range(n_layers):
        k = jax.random.fold_in(key, i)
        k_noise, k_drop = jax.random.split(k)
        x = x + 0.1 * jax.random.normal(k_noise, x.shape, x.dtype)
        keep = jax.random.bernoulli(k_drop, 0.9, x.shape)
        x = jnp.where(keep, x / 0.9, 0.0)
    return x
