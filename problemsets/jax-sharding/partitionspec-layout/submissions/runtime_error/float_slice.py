# Runtime error: forgets to cast num_devices to int, so jax.devices()[:4.0] raises TypeError.
import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P


def partitionspec_layout(num_devices, kernel_in, kernel_out):
    mesh = Mesh(np.array(jax.devices()[:num_devices]), ("model",))
    return NamedSharding(mesh, P(None, "model")).shard_shape((kernel_in, kernel_out))
