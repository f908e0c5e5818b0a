# Wrong answer: the squared error is summed over the outputs and averaged over the rows
# only (a per-example loss), so the loss and its gradients are out_dim times the mean over
# every element the task asks for; right only when out_dim is 1.
import jax
import jax.numpy as jnp


def loss_and_grads(w, b, x, y):
    def loss_fn(w, b):
        err = x @ w + b - y
        return jnp.mean(jnp.sum(err ** 2, axis=-1)), jnp.mean(jnp.abs(err))

    (loss, mae), (grad_w, grad_b) = jax.value_and_grad(
        loss_fn, argnums=(0, 1), has_aux=True)(w, b)
    return {"loss": loss, "mae": mae, "grad_w": grad_w, "grad_b": grad_b}
