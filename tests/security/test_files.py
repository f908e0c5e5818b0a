"""Filesystem attacks: the root is read-only, /tmp is a 64 MiB tmpfs (noexec, nosuid,
nodev) and every file is capped at the output limit + 1 byte; the problem package, its
hidden data and the reference solution are never in the sandbox; nothing survives a
submission."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.verdict import Verdict

from .support import TOKEN, Judge, describe, facts

pytestmark = pytest.mark.slow

RIGHT = "return [int(kernel_in), int(kernel_out) // int(num_devices)]"


def test_writes_outside_the_tmpfs_fail(judge_layout: Judge) -> None:
    report = judge_layout(f"""
        import errno, json, os

        PLACES = ["/", "/opt/jaxjudge", "/opt/jaxjudge/src/judge/harness", "/etc", "/usr/lib",
                  "/var/tmp", "/home", "/root", "/run", "/var/lock", "/sys/fs/cgroup"]
        FILES = ["/opt/jaxjudge/src/judge/harness/runner.py", "/opt/jaxjudge/bin/python",
                 "/etc/passwd", "/etc/hosts", "/proc/sys/kernel/core_pattern",
                 "/proc/sysrq-trigger", "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                 "/sys/fs/cgroup/pids/pids.max"]

        def attempt(fn, *args):
            try:
                fn(*args)
                return "done"
            except OSError as exc:
                return errno.errorcode.get(exc.errno, str(exc.errno))

        def create(path):
            with open(path, "x") as f:
                f.write("pwned")

        def append(path):
            with open(path, "a") as f:
                f.write("pwned")

        def attack():
            seen = {{}}
            for place in PLACES:
                seen["create " + place] = attempt(create, os.path.join(place, TOKEN))
                seen["mkdir " + place] = attempt(os.mkdir, os.path.join(place, TOKEN + "-d"))
            for path in FILES:
                seen["append " + path] = attempt(append, path)
                seen["chmod " + path] = attempt(os.chmod, path, 0o777)
            seen["rename harness"] = attempt(os.rename, "/opt/jaxjudge/src/judge/harness/codec.py",
                                             "/opt/jaxjudge/src/judge/harness/codec.bak")
            seen["symlink in /etc"] = attempt(os.symlink, "/tmp", "/etc/" + TOKEN)
            return seen

        AT_IMPORT = attack()
        print("@@", json.dumps({{"import": AT_IMPORT}}))

        def layout(num_devices, kernel_in, kernel_out):
            at_call = attack()
            print("@@", json.dumps({{"call": at_call}}))
            if "done" in list(AT_IMPORT.values()) + list(at_call.values()):
                return [0, 0]
            {RIGHT}
    """)
    assert report.verdict is Verdict.ACCEPTED, describe(report)
    seen = facts(report)
    for phase in ("import", "call"):
        outcomes = seen[phase]
        assert "done" not in outcomes.values(), outcomes
        for place in ("/", "/opt/jaxjudge", "/etc", "/usr/lib", "/var/tmp", "/home"):
            assert outcomes[f"create {place}"] == "EROFS", outcomes  # the root is read-only
        assert outcomes["append /opt/jaxjudge/src/judge/harness/runner.py"] in ("EACCES", "EROFS")
        assert set(outcomes.values()) <= {"EROFS", "EACCES", "EPERM", "ENOENT"}, outcomes
    for place in ("/", "/etc", "/var/tmp", "/tmp", "/home"):  # and nothing on the host
        assert not (Path(place) / TOKEN).exists()


def test_nothing_written_to_tmp_can_be_executed(judge_layout: Judge) -> None:
    report = judge_layout(f"""
        import ctypes, errno, json, mmap, os, shutil, subprocess

        def attempt(fn, *args):
            try:
                fn(*args)
                return "done"
            except OSError as exc:
                return errno.errorcode.get(exc.errno, type(exc).__name__) if exc.errno else type(exc).__name__

        def run(path):
            subprocess.run([path], check=True, timeout=5)

        def planted(directory, name, source):
            path = os.path.join(directory, TOKEN + name)
            if isinstance(source, bytes):
                open(path, "wb").write(source)
            else:
                shutil.copyfile(source, path)
            os.chmod(path, 0o755)
            return path

        def map_exec(path):
            with open(path, "rb") as f:
                mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ | mmap.PROT_EXEC, flags=mmap.MAP_PRIVATE)

        def attack():
            seen = {{"control /bin/true": attempt(run, "/bin/true")}}
            for directory in ("/tmp", "/dev/shm"):
                binary = planted(directory, "-true", "/bin/true")
                script = planted(directory, "-sh", b"#!/bin/sh\\necho pwned\\n")
                lib = planted(directory, "-lib.so", SMALL_LIB)
                seen["exec " + directory] = attempt(run, binary)
                seen["script " + directory] = attempt(run, script)
                seen["mmap exec " + directory] = attempt(map_exec, binary)
                seen["dlopen " + directory] = attempt(ctypes.CDLL, lib)
                seen["setuid bit " + directory] = attempt(os.chmod, binary, 0o4755)
            return seen

        import _ctypes  # a small shared library: a copy must fit the file size limit
        DYNLOAD = os.path.dirname(_ctypes.__file__)
        SMALL_LIB = min((os.path.join(DYNLOAD, n) for n in os.listdir(DYNLOAD) if n.endswith(".so")),
                        key=os.path.getsize)
        AT_IMPORT = attack()
        print("@@", json.dumps({{"import": AT_IMPORT}}))

        def layout(num_devices, kernel_in, kernel_out):
            at_call = attack()
            print("@@", json.dumps({{"call": at_call}}))
            {RIGHT}
    """)
    assert report.verdict is Verdict.ACCEPTED, describe(report)
    seen = facts(report)
    for phase in ("import", "call"):
        outcomes = seen[phase]
        assert outcomes["control /bin/true"] == "done", outcomes  # exec as such works
        for directory in ("/tmp", "/dev/shm"):  # but not from a writable place
            assert outcomes[f"exec {directory}"] == "EACCES", outcomes
            assert outcomes[f"script {directory}"] == "EACCES", outcomes
            assert outcomes[f"mmap exec {directory}"] == "EPERM", outcomes
            assert outcomes[f"dlopen {directory}"] == "OSError", outcomes


def test_symlinks_planted_as_the_capture_files_are_harmless(judge_layout: Judge) -> None:
    # Judge0 (CVE-2024-28185, -28189) read and chowned files the submission had replaced
    # with symlinks. The harness reads its capture files through descriptors opened before
    # the submission runs, and nothing on the trusted side opens a sandbox path.
    report = judge_layout(f"""
        import json, os

        LINKS = {{"stdout.txt": "/etc/passwd", "stderr.txt": "/proc/1/environ",
                  "job.json": "/etc/shadow", "result.json": "/proc/self/environ",
                  "submission.py": "/etc/passwd", "{TOKEN}": "/etc/passwd"}}

        def plant():
            for name, target in LINKS.items():
                tmp = "/tmp/." + name + ".new"
                os.symlink(target, tmp)
                os.replace(tmp, "/tmp/" + name)
            return sorted(n for n in os.listdir("/tmp") if os.path.islink("/tmp/" + n))

        print("@@", json.dumps({{"import": plant()}}))

        def layout(num_devices, kernel_in, kernel_out):
            print("@@", json.dumps({{"call": plant()}}))
            os.write(2, b"still writing to stderr\\n")
            {RIGHT}
    """)
    assert report.verdict is Verdict.ACCEPTED, describe(report)
    seen = facts(report)  # printed after the swap: the harness still reads its own files
    assert seen["call"] == sorted(["stdout.txt", "stderr.txt", "job.json", "result.json",
                                   "submission.py", TOKEN]), seen
    assert "still writing to stderr" in report.stderr
    for text in (report.stdout, report.stderr, report.message,
                 *(t.message for t in report.tests)):
        assert "root:" not in text and "/bin/bash" not in text and "nologin" not in text
        assert "XLA_FLAGS=" not in text and "PATH=" not in text and "HOSTNAME=" not in text
    assert not (Path("/tmp") / TOKEN).exists()


def test_the_problem_package_and_hidden_data_are_nowhere_in_the_sandbox(
    judge_vault: Judge,
) -> None:
    # Walk the whole filesystem at import: names a problem package has, the judge's trusted
    # modules, and the hidden answers in any file. Answer right only with what was found.
    report = judge_vault("""
        import importlib, json, time

        t0 = time.monotonic()
        seen, answers = SCAN_FILES("/")
        modules = {}
        for name in ("judge.grading", "judge.problem", "judge.testdata", "judge.checkers",
                     "judge.sandbox", "judge.settings"):
            try:
                importlib.import_module(name)
                modules[name] = "imported"
            except ImportError as exc:
                modules[name] = type(exc).__name__
        print("@@", json.dumps(dict(seen, answers=sorted(answers), modules=modules,
                                    seconds=round(time.monotonic() - t0, 1))))

        def vault(key):
            return answers.get(key, {0: 2, 1: 3}.get(key, 0))
    """)
    seen = facts(report)
    assert seen.get("answers") == [], describe(report)
    assert report.verdict is Verdict.WRONG_ANSWER, describe(report)
    assert [t.verdict for t in report.tests] == [Verdict.ACCEPTED] * 2 + [Verdict.WRONG_ANSWER] * 2
    assert seen["names"] == [] and seen["dirs"] == [], seen
    assert set(seen["modules"].values()) == {"ModuleNotFoundError"}, seen["modules"]
    # The search did cover the image: jax, jaxlib, numpy, Python.
    assert seen["files"] > 5_000 and seen["bytes"] > 300 << 20, seen


def test_the_disk_cannot_be_filled(judge_layout: Judge, still_healthy) -> None:
    report = judge_layout(f"""
        import errno, json, os

        def fill(directory, chunk):
            total, files, error = 0, 0, None
            data = b"x" * chunk
            while error is None and files < 5000:
                path = os.path.join(directory, "{TOKEN}-%d" % files)
                try:
                    with open(path, "wb", buffering=0) as f:
                        files += 1
                        while True:
                            n = f.write(data)
                            total += n
                            if n < len(data):
                                break
                except OSError as exc:
                    if exc.errno == errno.EFBIG and files < 5000:
                        continue  # this file is full; start another
                    error = errno.errorcode.get(exc.errno)
            for i in range(files):
                try:
                    os.unlink(os.path.join(directory, "{TOKEN}-%d" % i))
                except OSError:
                    pass
            return [total, files, error]

        def one_file(size):
            try:
                with open("/tmp/{TOKEN}-big", "wb", buffering=0) as f:
                    written = 0
                    while written < size:
                        written += f.write(b"y" * (1 << 20))
                return [written, None]
            except OSError as exc:
                return [os.path.getsize("/tmp/{TOKEN}-big"), errno.errorcode.get(exc.errno)]
            finally:
                os.unlink("/tmp/{TOKEN}-big")

        def layout(num_devices, kernel_in, kernel_out):
            if num_devices == 4:
                print("@@", json.dumps({{"one file": one_file(1 << 30),
                                        "tmp": fill("/tmp", 1 << 16),
                                        "shm": fill("/dev/shm", 1 << 16)}}))
            {RIGHT}
    """)
    assert report.verdict is Verdict.ACCEPTED, describe(report)
    seen = facts(report)
    assert seen["one file"] == [64 * 1024 + 1, "EFBIG"], seen  # RLIMIT_FSIZE: output + 1
    for place in ("tmp", "shm"):
        total, files, error = seen[place]
        assert error == "ENOSPC", seen  # the tmpfs filled up ...
        assert total <= 64 << 20, seen  # ... at 64 MiB
        assert total > 32 << 20, seen  # (and really was filled)
    still_healthy()


def test_nothing_a_submission_leaves_reaches_the_next(judge_layout: Judge) -> None:
    shm_key = int(TOKEN[3:], 16) & 0x7FFFFFFF
    first = judge_layout(f"""
        import ctypes, os
        for place in ("/tmp", "/dev/shm", "/dev/mqueue"):
            try:
                open(os.path.join(place, TOKEN), "w").write("from the first submission")
            except OSError:
                pass
        libc = ctypes.CDLL(None, use_errno=True)
        SHM = libc.shmget({shm_key}, 4096, 0o1000 | 0o666)  # IPC_CREAT: SysV shared memory
        print("@@", '{{"shm": %d}}' % SHM)

        def layout(num_devices, kernel_in, kernel_out):
            {RIGHT}
    """)
    assert first.verdict is Verdict.ACCEPTED, describe(first)
    assert facts(first)["shm"] >= 0, describe(first)  # the first did create it
    second = judge_layout(f"""
        import ctypes, json, os
        LEFT = [p for p in ("/tmp", "/dev/shm", "/dev/mqueue")
                if os.path.exists(os.path.join(p, TOKEN))]
        SHM = ctypes.CDLL(None, use_errno=True).shmget({shm_key}, 0, 0)
        print("@@", json.dumps({{"left": LEFT, "shm": SHM, "tmp": sorted(os.listdir("/tmp"))}}))

        def layout(num_devices, kernel_in, kernel_out):
            if LEFT or SHM >= 0:
                return [0, 0]
            {RIGHT}
    """)
    assert second.verdict is Verdict.ACCEPTED, describe(second)
    seen = facts(second)
    assert seen["left"] == [] and seen["shm"] == -1, seen
    assert seen["tmp"] == ["stderr.txt", "stdout.txt"], seen
    for place in ("/tmp", "/dev/shm"):  # nor did anything land on the host
        assert not (Path(place) / TOKEN).exists()
