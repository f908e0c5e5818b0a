# Accepted: no JAX at all. An nnx.Linear with a bias always holds exactly two parameter
# arrays (kernel and bias), and the other two numbers are the inputs as ints.


def mesh_init_simulate(seed, x, features, mesh_axes):
    return [int(features), int(mesh_axes), 2]
