# Wrong answer: jax.tree.map applies the decay to every leaf, biases, scales and
# embeddings included, instead of to the kernels only.
import jax


def sgd_step(params, grads, lr, decay):
    return jax.tree.map(lambda p, g: p - lr * (g + decay * p), params, grads)
