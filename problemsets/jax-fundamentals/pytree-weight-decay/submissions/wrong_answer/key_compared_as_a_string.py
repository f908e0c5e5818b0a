# Wrong answer: the path's last entry is a DictKey, and str() of it is "['kernel']", not
# "kernel": the test never matches, so no leaf is decayed. Right only when decay is 0
# (compare path[-1].key, or use jax.tree_util.keystr on the whole path).
import jax


def sgd_step(params, grads, lr, decay):
    def update(path, p, g):
        if str(path[-1]) == "kernel":
            g = g + decay * p
        return p - lr * g

    return jax.tree_util.tree_map_with_path(update, params, grads)
