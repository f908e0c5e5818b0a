"""Development tools that run beside the code (not installed with it)."""
