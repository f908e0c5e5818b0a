"""jaxjudge: an auto-grading judge for JAX and Flax exercises.

The core package. It knows nothing of the web or the queue: ``api/`` and ``workers/``
depend on it, never the other way round (checked by import-linter, see pyproject.toml).
"""

__version__ = "0.1.0"
