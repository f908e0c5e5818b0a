# Runtime error: the loss function returns (mse, mae) but value_and_grad is called without
# has_aux=True, so JAX tries to differentiate a tuple and raises a TypeError ("Gradient only
# defined for scalar-output functions").
import jax
import jax.numpy as jnp


def loss_and_grads(w, b, x, y):
    def loss_fn(w, b):
        err = x @ w + b - y
        return jnp.mean(err ** 2), jnp.mean(jnp.abs(err))

    (loss, mae), (grad_w, grad_b) = jax.value_and_grad(loss_fn, argnums=(0, 1))(w, b)
    return {"loss": loss, "mae": mae, "grad_w": grad_w, "grad_b": grad_b}
