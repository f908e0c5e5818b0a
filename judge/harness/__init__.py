"""The harness: the only code that runs a submission.

It runs inside a sandbox (a child process, later a container) and talks to the trusted
side over a line protocol, one JSON object per line, on the file descriptor that was its
standard output when it started:

1. It imports jax and flax, initialises the 8 CPU devices, and sends ``ready``.
2. It reads one job (JSON) from standard input: the submission's code, the entry point,
   the limits and the test *inputs*. Expected outputs are never part of a job.
3. It redirects descriptors 1 and 2 to size-capped files, loads the code as a fresh
   module (``loaded`` or ``compile_error``), then for each test sends ``start``, calls the
   entry point, and sends ``result`` with the encoded return value (see ``codec``).
4. It sends ``done`` and leaves with ``os._exit`` (no atexit hooks of the submission run).

The trusted side validates every line against the pydantic models in
``judge.sandbox.protocol``; this package must stay importable without pydantic, and only
imports numpy, jax and flax (checked by import-linter).
"""

HARNESS_VERSION = "1"
PROTOCOL_FD_ENV = "JAXJUDGE_PROTOCOL_FD"
