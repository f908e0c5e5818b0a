"""``jaxjudge lti``: platforms, the tool's keys and the URLs an LMS administrator needs."""

from __future__ import annotations

import click


@click.group()
def lti() -> None:
    """LTI 1.3: platforms, the tool's keys, URLs for an LMS administrator."""
