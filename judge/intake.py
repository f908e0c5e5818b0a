"""Submitted bytes as code to grade: :func:`decode_code` checks and decodes a Python
source file (size, UTF-8, not empty, no NUL bytes), and :class:`Source` is the code with
notes on what was done to it on the way (a notebook's removed lines: :mod:`judge.notebook`,
which also reads an upload by its name).
"""

from __future__ import annotations

from dataclasses import dataclass

from judge.errors import SubmissionRejected
from judge.settings import Settings


def decode_code(data: bytes, settings: Settings, noun: str = "the file") -> str:
    """Submitted bytes as source text, or :class:`SubmissionRejected` saying why not,
    naming the submission ``noun`` (the CLI's file; the API's JSON field)."""
    if len(data) > settings.max_code_bytes:
        raise SubmissionRejected(
            f"{noun} is {len(data)} bytes; the limit is {settings.max_code_bytes} bytes"
        )
    try:
        code = data.decode("utf-8-sig")  # a leading BOM is fine, as Python itself allows
    except UnicodeDecodeError as exc:
        raise SubmissionRejected(f"{noun} is not UTF-8 (byte {exc.start})") from None
    if not code.strip():
        raise SubmissionRejected(f"{noun} is empty")
    if "\0" in code:
        raise SubmissionRejected(f"{noun} contains NUL bytes")
    return code


@dataclass(frozen=True)
class Source:
    """Code to grade and what was done to it on the way (notes for the report)."""

    code: str
    notes: tuple[str, ...] = ()
