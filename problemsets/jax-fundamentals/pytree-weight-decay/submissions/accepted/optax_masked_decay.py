# Accepted: optax does it: add_decayed_weights with a mask that marks the leaves named
# "kernel" (g + decay * p there), then sgd (-lr times that), applied to the parameters.
import jax
import optax


def sgd_step(params, grads, lr, decay):
    def kernels(tree):
        return jax.tree_util.tree_map_with_path(
            lambda path, _: getattr(path[-1], "key", None) == "kernel", tree)

    tx = optax.chain(optax.add_decayed_weights(decay, mask=kernels), optax.sgd(lr))
    updates, _ = tx.update(grads, tx.init(params), params)
    return optax.apply_updates(params, updates)
