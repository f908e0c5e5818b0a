# Wrong answer: the layer's key is split, and then the noise is drawn from the parent key
# k itself instead of k_noise: a key used again after it was split, so the noise is
# correlated with the keys derived from it. The dropout mask is right.
import jax
import jax.numpy as jnp


def noisy_forward(key, x, n_layers):
    for i in range(n_layers):
        k = jax.random.fold_in(key, i)
        _, k_drop = jax.random.split(k)
        x = x + 0.1 * jax.random.normal(k, x.shape, x.dtype)
        keep = jax.random.bernoulli(k_drop, 0.9, x.shape)
        x = jnp.where(keep, x / 0.9, 0.0)
    return x
