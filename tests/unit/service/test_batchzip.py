"""service.batchzip: reading a class upload, a hostile zip of <student_id>.py files."""

from __future__ import annotations

import io
import os
import struct
import tracemalloc
import warnings
import zipfile

import pytest

from judge.errors import SubmissionRejected, UsageError
from service.batchzip import Member, read_batch_zip

MIB = 1 << 20
LIMITS = {"max_files": 10, "max_total_bytes": 64 * 1024, "max_file_bytes": 16 * 1024}
Entry = tuple["str | zipfile.ZipInfo", bytes]


def pairs(members: list[Member]) -> list[tuple[str, bytes]]:
    return [(m.student_id, m.data) for m in members]


def make_zip(entries: list[Entry], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns on duplicate names; we want them
        with zipfile.ZipFile(buf, "w", compression) as zf:
            for name, data in entries:
                zf.writestr(name, data)
    return buf.getvalue()


def unix_entry(name: str, mode: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = mode << 16
    return info


def patch_first_entry(data: bytes, *, flags: int = 0, file_size: int | None = None) -> bytes:
    """Rewrite the first member's headers, central directory and local header alike."""
    buf = bytearray(data)
    eocd = buf.rfind(b"PK\x05\x06")
    central = struct.unpack_from("<I", buf, eocd + 16)[0]
    local = struct.unpack_from("<I", buf, central + 42)[0]
    assert buf[central:central + 4] == b"PK\x01\x02" and buf[local:local + 4] == b"PK\x03\x04"
    for offset in (central + 8, local + 6):
        struct.pack_into("<H", buf, offset, struct.unpack_from("<H", buf, offset)[0] | flags)
    if file_size is not None:
        struct.pack_into("<I", buf, central + 24, file_size)
        struct.pack_into("<I", buf, local + 22, file_size)
    return bytes(buf)


def rejected(data: bytes, **limits: int) -> str:
    with pytest.raises(SubmissionRejected) as info:
        read_batch_zip(data, **{**LIMITS, **limits})
    message = str(info.value)
    assert message.startswith("batch archive: ") and "\n" not in message
    return message


def test_top_level_files_come_back_in_archive_order_untouched() -> None:
    data = make_zip([("bob.py", b"x = 1\n"), ("alice.py", "s = 'é'\n".encode())])
    assert pairs(read_batch_zip(data, **LIMITS)) == [("bob", b"x = 1\n"), ("alice", "s = 'é'\n".encode())]


def test_a_zipped_folder_is_accepted_and_mac_and_hidden_entries_are_ignored() -> None:
    data = make_zip([
        ("class/", b""),
        ("class/alice.py", b"a"),
        ("class/.DS_Store", b"\0junk"),
        ("__MACOSX/class/._alice.py", b"\0resource fork"),
        ("class/.hidden/notes.txt", b"ignored"),
        ("class/bob.py", b"b"),
        (".DS_Store", b"\0"),
    ])
    assert pairs(read_batch_zip(data, **LIMITS)) == [("alice", b"a"), ("bob", b"b")]


def test_ids_may_use_the_allowed_punctuation_up_to_128_characters() -> None:
    long_id = "a" * 128
    data = make_zip([("a.b_c@d+e-f.py", b"1"), (f"{long_id}.py", b"2"), ("9lives.py", b"3")])
    assert [m.student_id for m in read_batch_zip(data, **LIMITS)] == ["a.b_c@d+e-f", long_id, "9lives"]


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("../evil.py", "entry '../evil.py' escapes the archive"),
        ("class/../../evil.py", "escapes the archive"),
        ("/abs.py", "entry '/abs.py' is an absolute path"),
        ("C:/win.py", "is an absolute path"),
        ("class\\alice.py", "contains a backslash"),
        ("./alice.py", "empty or '.' path component"),
        ("class//alice.py", "empty or '.' path component"),
        ("a/b/c.py", "entry 'a/b/c.py' is in a nested folder"),
        ("notes.txt", "entry 'notes.txt' is not a .py or .ipynb file"),
        ("alice.PY", "is not a .py or .ipynb file"),
        ("alice.IPYNB", "is not a .py or .ipynb file"),
        ("bad id.py", "entry 'bad id.py' is not a valid student id"),
        ("-rf.py", "is not a valid student id"),
        ("a" * 129 + ".py", "is not a valid student id"),
        ("evil\n.py", r"entry 'evil\n.py' is not a valid student id"),
    ],
)
def test_bad_entry_names_are_refused_by_name(name: str, fragment: str) -> None:
    assert fragment in rejected(make_zip([("ok.py", b"1"), (name, b"2")]))


def test_files_must_share_one_folder_or_none() -> None:
    assert "entry 'b/y.py' is outside the folder 'a/'" in rejected(
        make_zip([("a/x.py", b"1"), ("b/y.py", b"2")])
    )
    assert "entry 'top.py' is outside the folder 'a/'" in rejected(
        make_zip([("top.py", b"1"), ("a/x.py", b"2")])
    )


def test_duplicate_ids_are_refused_also_when_the_case_differs() -> None:
    assert "entry 'alice.py' duplicates student id 'Alice'" in rejected(
        make_zip([("Alice.py", b"1"), ("alice.py", b"2")])
    )
    assert "duplicates student id 'bob'" in rejected(make_zip([("bob.py", b"1"), ("bob.py", b"2")]))
    assert "duplicates" in rejected(make_zip([("class/ALICE.py", b"1"), ("class/alice.py", b"2")]))


def test_symlinks_and_other_special_files_are_refused() -> None:
    link = make_zip([("ok.py", b"1"), (unix_entry("alice.py", 0o120777), b"/etc/passwd")])
    assert "entry 'alice.py' is a symlink" in rejected(link)
    fifo = make_zip([(unix_entry("bob.py", 0o010644), b"")])
    assert "entry 'bob.py' is not a regular file" in rejected(fifo)
    regular = make_zip([(unix_entry("carol.py", 0o100644), b"c")])
    assert pairs(read_batch_zip(regular, **LIMITS)) == [("carol", b"c")]


def test_encrypted_entries_are_refused() -> None:
    data = patch_first_entry(make_zip([("alice.py", b"secret")]), flags=0x1)
    assert "entry 'alice.py' is encrypted" in rejected(data)


def test_what_is_not_a_sound_zip_is_refused() -> None:
    assert "not a valid zip archive" in rejected(b"print('not a zip')\n")
    assert "not a valid zip archive" in rejected(b"")
    whole = make_zip([("alice.py", b"x = 1\n" * 50)])
    assert "not a valid zip archive" in rejected(whole[: len(whole) // 2])
    stored = make_zip([("alice.py", b"print('hi')\n")], zipfile.ZIP_STORED)
    flipped = stored.replace(b"print('hi')", b"print('ho')")
    assert flipped != stored
    assert "entry 'alice.py' is corrupt" in rejected(flipped)


def test_an_archive_without_files_is_refused() -> None:
    assert "contains no" in rejected(make_zip([]))
    assert "contains no" in rejected(make_zip([("class/", b""), ("class/.DS_Store", b"x")]))


def test_the_file_count_is_limited() -> None:
    entries: list[Entry] = [(f"s{i}.py", b"1") for i in range(3)]
    assert len(read_batch_zip(make_zip(entries), **{**LIMITS, "max_files": 3})) == 3
    assert "has 4 files, more than the limit of 3" in rejected(
        make_zip([*entries, ("s3.py", b"1")]), max_files=3
    )


def test_each_file_is_limited_in_size() -> None:
    assert read_batch_zip(make_zip([("a.py", b"x" * 100)]), **{**LIMITS, "max_file_bytes": 100})
    message = rejected(make_zip([("a.py", b"x" * 101)]), max_file_bytes=100)
    assert "entry 'a.py' is over the limit of 100 bytes per file" in message


def test_all_files_together_are_limited_in_size() -> None:
    entries: list[Entry] = [("a.py", b"x" * 60), ("b.py", b"y" * 40)]
    assert len(read_batch_zip(make_zip(entries), **{**LIMITS, "max_total_bytes": 100})) == 2
    message = rejected(make_zip([*entries, ("c.py", b"z")]), max_total_bytes=100)
    assert "entry 'c.py' takes the archive over the limit of 100 bytes" in message


def test_a_highly_compressed_member_over_1_mib_is_a_bomb() -> None:
    roomy = {"max_file_bytes": 8 * MIB, "max_total_bytes": 16 * MIB}
    bomb = make_zip([("bomb.py", b"\0" * (2 * MIB))])  # about 1000:1
    assert "entry 'bomb.py' compresses more than 200:1" in rejected(bomb, **roomy)
    noise = os.urandom(2 * MIB)  # the same size, barely compressible: fine
    assert read_batch_zip(make_zip([("noise.py", noise)]), **{**LIMITS, **roomy}) == [
        Member("noise", noise)
    ]
    small = b"\0" * (MIB // 2)  # under 1 MiB, any ratio is fine
    assert read_batch_zip(make_zip([("small.py", small)]), **{**LIMITS, **roomy}) == [
        Member("small", small)
    ]


def test_a_header_that_lies_about_the_size_cannot_expand_the_member() -> None:
    honest = make_zip([("liar.py", b"\0" * (32 * MIB))])
    assert len(honest) < MIB // 4
    assert "over the limit" in rejected(honest, max_file_bytes=MIB)  # declared size: refused
    lying = patch_first_entry(honest, file_size=1000)
    assert zipfile.ZipFile(io.BytesIO(lying)).getinfo("liar.py").file_size == 1000
    tracemalloc.start()
    try:
        message = rejected(lying, max_file_bytes=MIB, max_total_bytes=2 * MIB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "entry 'liar.py' is corrupt" in message
    # Bounded by the 1 MiB limit (zlib's output buffer), nowhere near the 32 MiB inside.
    assert peak < 4 * MIB, f"reading a lying member took {peak} bytes"


def test_rejections_are_usage_errors() -> None:
    with pytest.raises(UsageError):
        read_batch_zip(b"junk", **LIMITS)


def test_members_are_read_through_a_bounded_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each read asks for at most one byte over what the limits still allow."""
    asked: list[int] = []
    real_open = zipfile.ZipFile.open

    def spying_open(self: zipfile.ZipFile, *args: object, **kwargs: object) -> object:
        member = real_open(self, *args, **kwargs)  # type: ignore[arg-type]
        real_read = member.read

        def read(n: int = -1) -> bytes:
            asked.append(n)
            return real_read(n)

        member.read = read  # type: ignore[method-assign]
        return member

    monkeypatch.setattr(zipfile.ZipFile, "open", spying_open)
    data = make_zip([("a.py", b"x" * 10), ("b.py", b"y" * 10)])
    limits = {"max_files": 5, "max_file_bytes": 30, "max_total_bytes": 35}
    assert pairs(read_batch_zip(data, **limits)) == [("a", b"x" * 10), ("b", b"y" * 10)]
    assert asked == [31, 26]  # min(30, 35) + 1, then min(30, 35 - 10) + 1


def test_notebooks_come_beside_python_files_with_their_own_size_limit() -> None:
    data = make_zip([("class/bob.py", b"x = 1\n"), ("class/alice.ipynb", b"{" + b" " * 998 + b"}")])
    members = read_batch_zip(data, **{**LIMITS, "max_file_bytes": 100, "max_notebook_bytes": 1000})
    assert members == [Member("bob", b"x = 1\n"), Member("alice", b"{" + b" " * 998 + b"}", True)]
    assert [m.filename for m in members] == ["bob.py", "alice.ipynb"]
    message = rejected(data, max_file_bytes=100, max_notebook_bytes=999)
    assert "entry 'class/alice.ipynb' is over the limit of 999 bytes per notebook" in message
    # without a notebook limit, a notebook is held to the file limit
    assert "over the limit of 100 bytes per notebook" in rejected(data, max_file_bytes=100)


def test_one_student_sends_a_python_file_or_a_notebook_not_both() -> None:
    message = rejected(make_zip([("alice.py", b"1"), ("alice.ipynb", b"{}")]))
    assert "entry 'alice.ipynb' duplicates student id 'alice'" in message
