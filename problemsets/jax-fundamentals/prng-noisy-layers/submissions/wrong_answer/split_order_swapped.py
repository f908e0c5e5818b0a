# Wrong answer: the two keys of split(k) taken in the other order, k_drop first: just as
# random, but the noise comes from the dropout's key and the mask from the noise's, so
# they are other numbers than the task's (already layer 0's mask differs).
import jax
import jax.numpy as jnp


def noisy_forward(key, x, n_layers):
    for i in range(n_layers):
        k_drop, k_noise = jax.random.split(jax.random.fold_in(key, i))
        x = x + 0.1 * jax.random.normal(k_noise, x.shape, x.dtype)
        keep = jax.random.bernoulli(k_drop, 0.9, x.shape)
        x = jnp.where(keep, x / 0.9, 0.0)
    return x
