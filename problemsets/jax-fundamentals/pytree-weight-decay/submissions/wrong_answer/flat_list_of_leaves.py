# Wrong answer: the right update on every leaf, but returned as the flat list of leaves
# (jax.tree.leaves) instead of the tree: the caller cannot tell which array is which, and
# the result's structure is not the parameters'.
import jax


def sgd_step(params, grads, lr, decay):
    paths_and_params, _ = jax.tree_util.tree_flatten_with_path(params)
    out = []
    for (path, p), g in zip(paths_and_params, jax.tree.leaves(grads)):
        if getattr(path[-1], "key", None) == "kernel":
            g = g + decay * p
        out.append(p - lr * g)
    return out
