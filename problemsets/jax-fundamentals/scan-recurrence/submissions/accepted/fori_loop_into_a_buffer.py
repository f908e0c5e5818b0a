# Accepted: jax.lax.fori_loop writing each state into a preallocated (T, H) buffer. Not a
# scan, but a compiled loop all the same: one while operation, whatever T is.
import jax
import jax.numpy as jnp


def rnn_states(w_h, w_x, xs, h0):
    def body(t, carry):
        h, out = carry
        h = jnp.tanh(h @ w_h + xs[t] @ w_x)
        return h, out.at[t].set(h)

    out = jnp.zeros((xs.shape[0], h0.shape[0]), h0.dtype)
    _, out = jax.lax.fori_loop(0, xs.shape[0], body, (h0, out))
    return out
