import os

# Before anything imports jax: 8 CPU devices, as in the sandbox.
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
os.environ["JAX_PLATFORMS"] = "cpu"
