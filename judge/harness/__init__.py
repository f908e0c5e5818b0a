"""The harness: the only code that runs a submission.

It runs inside a sandbox (a child process, or a container) and talks to the trusted side
over a line protocol, one JSON object per line each way: the supervisor's messages on its
standard input, its events on the file descriptor that was its standard output when it
started (``judge.sandbox.protocol`` declares both):

1. It imports jax and flax, initialises the 8 CPU devices, binds its encoder, records the
   integrity snapshot (``integrity``) and sends ``ready``.
2. It reads ``load`` (the code, the entry point, the limits, how many tests follow),
   redirects descriptors 1 and 2 to size-capped files and 0 to /dev/null, loads the
   code as a fresh module and sends ``loaded`` or ``compile_error``.
3. For each test it reads ``test`` (that test's inputs, sent only now), sends ``start``,
   calls the entry point and sends ``result`` with the encoded return value (``codec``).
   Expected outputs are never part of any message.
4. It sends ``done`` and leaves with ``os._exit`` (no atexit hooks of the submission run).
   If the integrity check fails after loading or after a test it sends ``interfered``
   and leaves.

The trusted side validates every line against the pydantic models in
``judge.sandbox.protocol``; this package must stay importable without pydantic. It imports
only itself, the standard library, numpy, jax, jaxlib, flax and pyseccomp (the zygote's
children's seccomp filter); an import-linter contract in pyproject.toml checks it.

One module per job: ``runner`` (the loop above) with ``startup`` (before the devices come
up), ``channel`` (the protocol's two ends), ``capture`` (the submission's output),
``limits`` (the alarms), ``submission`` (its module and exceptions), ``inputs`` (a test's
inputs), ``codec`` (encoding results), ``layout`` (where a shard lies, and putting an array
together), ``integrity`` (the tripwire), ``probe`` and ``program`` (probes); the zygote
(``zygote``) with ``frames``, ``relay``, ``keeper`` and ``isolation``.
"""

HARNESS_VERSION = "4"
PROTOCOL_FD_ENV = "JAXJUDGE_PROTOCOL_FD"
