# Accepted: jax.make_mesh with an Auto axis over the first n devices; returns a tuple.
import jax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def partitionspec_layout(num_devices, kernel_in, kernel_out):
    n = int(num_devices)
    mesh = jax.make_mesh((n,), ("model",), axis_types=(AxisType.Auto,),
                         devices=jax.devices()[:n])
    return tuple(NamedSharding(mesh, P(None, "model")).shard_shape(
        (int(kernel_in), int(kernel_out))))
