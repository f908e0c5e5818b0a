# Wrong answer: the keys are derived once, before the loop, so every layer draws the same
# noise and the same dropout mask (a unit dropped in layer 0 is dropped in every layer).
# Right for one layer only.
import jax
import jax.numpy as jnp


def noisy_forward(key, x, n_layers):
    k_noise, k_drop = jax.random.split(jax.random.fold_in(key, 0))
    for _ in range(n_layers):
        x = x + 0.1 * jax.random.normal(k_noise, x.shape, x.dtype)
        keep = jax.random.bernoulli(k_drop, 0.9, x.shape)
        x = jnp.where(keep, x / 0.9, 0.0)
    return x
