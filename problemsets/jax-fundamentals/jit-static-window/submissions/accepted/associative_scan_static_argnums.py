# Accepted: the prefix sums written with jax.lax.associative_scan, the first window taken
# from them directly and the others as differences (no padding), and window made static
# by position (static_argnums=1) with jax.jit applied as a call at module level.
import jax
import jax.numpy as jnp


def _window_sums(x, window):
    c = jax.lax.associative_scan(jnp.add, x, axis=x.ndim - 1)
    first = c[..., window - 1:window]
    return jnp.concatenate([first, c[..., window:] - c[..., :-window]], axis=-1)


window_sums = jax.jit(_window_sums, static_argnums=1)
