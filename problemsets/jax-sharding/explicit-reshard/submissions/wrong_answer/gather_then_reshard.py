# Wrong (probe 'one-program'): reshards both operands to replicated copies, multiplies
# them (the product is then replicated too) and reshards the result to the requested spec.
# The values and the layout are right, but every device computed the whole product: up
# to 8 times the reference's work per device (and gathered all of x and w on the way).
import jax
from jax.sharding import PartitionSpec as P
from jax.sharding import reshard


def explicit_matmul(x, w, mesh_shape, x_spec, w_spec, out_spec):
    mesh = jax.make_mesh(tuple(mesh_shape), ("data", "model"))
    with jax.set_mesh(mesh):
        x = reshard(x, P(*x_spec))          # PartitionSpec accepts a list for a tuple entry
        w = reshard(w, P(*w_spec))
        y = reshard(x, P()) @ reshard(w, P())
        y = reshard(y, P(*out_spec))
    return [x, w, y]
