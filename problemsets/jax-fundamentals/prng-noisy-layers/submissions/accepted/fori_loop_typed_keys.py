# Accepted: the raw key wrapped into a typed key (jax.random.wrap_key_data: the same
# threefry bits), the layers as a jax.lax.fori_loop whose traced index goes to fold_in,
# and the mask applied as a 0/1 product: the same random numbers as the reference.
import jax


def noisy_forward(key, x, n_layers):
    key = jax.random.wrap_key_data(key)

    def layer(i, x):
        k_noise, k_drop = jax.random.split(jax.random.fold_in(key, i))
        x = x + 0.1 * jax.random.normal(k_noise, x.shape, x.dtype)
        return x * jax.random.bernoulli(k_drop, 0.9, x.shape) / 0.9

    return jax.lax.fori_loop(0, n_layers, layer, x)
