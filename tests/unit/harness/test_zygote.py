"""The zygote's pieces that run without a container: frames, the relay's fence."""

from __future__ import annotations

import os

import pytest

from judge.harness import frames, zygote
from judge.harness.frames import CLOSE, DATA, DONE, HEADER, MAX_FRAME, SPAWN
from judge.harness.relay import Relay


def frame(kind: int, payload: bytes = b"") -> bytes:
    return HEADER.pack(kind, len(payload)) + payload


def test_frames_are_parsed_across_any_split() -> None:
    stream = frame(DATA, b"hello\n") + frame(CLOSE) + frame(DATA, b"x" * 70_000)
    for cut in (1, 3, 5, 7, 11, 64, len(stream)):
        relay = Relay(zygote.Zygote.__new__(zygote.Zygote), 0)
        got = []
        for at in range(0, len(stream), cut):
            got += relay.frames(stream[at:at + cut])
        assert got == [(DATA, b"hello\n"), (CLOSE, b""), (DATA, b"x" * 70_000)], cut
        assert not relay.pending


def test_a_frame_over_the_limit_ends_the_relay() -> None:
    relay = Relay(zygote.Zygote.__new__(zygote.Zygote), 0)
    with pytest.raises(SystemExit):
        relay.frames(HEADER.pack(DATA, MAX_FRAME + 1))


def test_the_fence_reads_up_to_done_and_not_a_byte_more() -> None:
    """After the child's exit the relay drops this child's late frames up to DONE, and
    leaves the next SPAWN in the pipe for the zygote."""
    read, write = os.pipe()
    saved = os.dup(0)
    try:
        late = frame(DATA, b"late input " * 100) + frame(CLOSE) + frame(DONE)
        following = frame(SPAWN, b'{"tmpfs_mb": 64}') + frame(DATA, b"the next code")
        os.write(write, late + following)
        os.close(write)
        os.dup2(read, 0)
        relay = Relay(zygote.Zygote.__new__(zygote.Zygote), 0)
        relay.pending += late[:3]  # part of a frame already read with the child's bytes
        os.read(0, 3)
        relay.drain()
        assert os.read(0, 1 << 16) == following
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        os.close(read)


def test_read_exact_never_reads_ahead() -> None:
    read, write = os.pipe()
    os.write(write, b"abcdef")
    os.close(write)
    try:
        assert frames.read_exact(read, 4) == b"abcd"
        assert frames.read_exact(read, 2) == b"ef"
        assert frames.read_exact(read, 1) is None
    finally:
        os.close(read)
