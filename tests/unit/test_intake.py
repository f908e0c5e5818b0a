"""judge.intake: ``decode_code`` (submitted bytes as source text, or why not)."""

from __future__ import annotations

import pytest

from judge.errors import SubmissionRejected
from judge.intake import decode_code
from judge.settings import Settings

SETTINGS = Settings(max_code_bytes=1000)


def test_decode_code_returns_the_text() -> None:
    source = "def f(x):\n    return x  # café ☃\n"
    assert decode_code(source.encode(), SETTINGS) == source


@pytest.mark.parametrize("data", [b"", b"   ", b"\n\n\t \r\n"], ids=repr)
def test_empty_code_is_rejected(data: bytes) -> None:
    with pytest.raises(SubmissionRejected, match="empty"):
        decode_code(data, SETTINGS)


@pytest.mark.parametrize(
    "data", [b"x = 1\n\xff\n", b"\xc3(", b"x = '\xed\xa0\x80'", b"\x80abc"], ids=repr
)
def test_non_utf8_code_is_rejected(data: bytes) -> None:
    with pytest.raises(SubmissionRejected, match="UTF-8"):
        decode_code(data, SETTINGS)


@pytest.mark.parametrize("data", [b"x = 1\0\n", b"\0", b"def f():\n    return '\x00'\n"],
                         ids=repr)
def test_code_with_nul_is_rejected(data: bytes) -> None:
    with pytest.raises(SubmissionRejected, match="NUL"):
        decode_code(data, SETTINGS)


def test_code_size_limit() -> None:
    at_limit = b"#" * (SETTINGS.max_code_bytes - 1) + b"\n"
    assert decode_code(at_limit, SETTINGS) == at_limit.decode()
    with pytest.raises(SubmissionRejected, match="1001 bytes"):
        decode_code(at_limit + b"\n", SETTINGS)
    # counted in bytes, not characters
    with pytest.raises(SubmissionRejected, match="limit"):
        decode_code(("é" * 501).encode(), SETTINGS)


def test_code_with_a_utf8_bom_is_accepted_as_python_accepts_it() -> None:
    # Editors on Windows save UTF-8 with a byte order mark, and `python file.py` runs such
    # a file: decode_code drops the mark, as Python does (kept, U+FEFF made compile() fail
    # with "invalid non-printable character" and a correct submission a compile_error).
    source = decode_code(b"\xef\xbb\xbfdef f(x):\n    return x\n", SETTINGS)
    compile(source, "submission.py", "exec")
