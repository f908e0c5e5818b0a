# Runtime error: the argument is already a key, and jax.random.key(key) expects a scalar
# seed: "TypeError: key accepts a scalar seed, but was given an array of shape (2,)".
# (jax.random.wrap_key_data(key) turns a raw key into a typed one.)
import jax
import jax.numpy as jnp


def noisy_forward(key, x, n_layers):
    key = jax.random.key(key)
    for i in range(n_layers):
        k_noise, k_drop = jax.random.split(jax.random.fold_in(key, i))
        x = x + 0.1 * jax.random.normal(k_noise, x.shape, x.dtype)
        keep = jax.random.bernoulli(k_drop, 0.9, x.shape)
        x = jnp.where(keep, x / 0.9, 0.0)
    return x
