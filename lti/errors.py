"""What the LTI endpoints refuse with."""

from __future__ import annotations


class LaunchError(Exception):
    """A login or launch refused; the message is safe to show (it names no secret)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status
