"""Attacks across submissions in the ``zygote`` sandbox.

A zygote container serves many submissions, one child at a time. Each attack here is two
submissions graded in sequence on the same container (both report the container's host
name, and the test checks they match): the first leaves something behind, or aims at the
zygote; the second looks for what the first left, and proves the zygote still serves it
normally. The first behaves well otherwise (right answers, clean exit), or its container
would be replaced and the second would run elsewhere.
"""

from __future__ import annotations

import secrets
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

from judge.catalog import Catalog
from judge.grading import grade
from judge.harness.isolation import UNSHARE_FLAGS
from judge.report import VerdictReport
from judge.sandbox import get_sandbox
from judge.sandbox.base import Sandbox
from judge.settings import Settings
from judge.verdict import Verdict

from .support import (
    INPUT_HEADS,
    SEARCH_CODE,
    TOKEN,
    describe,
    facts,
    header,
    host_processes,
    wait_until,
)

pytestmark = pytest.mark.slow

RIGHT = "return [int(kernel_in), int(kernel_out) // int(num_devices)]"
PROBE = """
import json as _json, socket as _socket
print("@@", _json.dumps({"host": _socket.gethostname()}))
"""
# A secret of the first submission's code, found by head and tail (as support.py's
# SEARCH does), so the second's code and memory never hold it whole.
CODE_SECRET = str(10**9 + secrets.randbelow(9 * 10**9))
CODE_HEADS = {"code": (CODE_SECRET[:7].encode(), CODE_SECRET[7:].encode())}


@pytest.fixture(scope="module")
def zygote_sandbox(settings: Settings) -> Iterator[Sandbox]:
    sandbox = get_sandbox("zygote", settings.model_copy(update={"zygote_count": 1}))
    yield sandbox
    sandbox.close()


def grade_on(sandbox: Sandbox, settings: Settings, problem: Any, code: str,
             **consts: Any) -> VerdictReport:
    source = header(TOKEN=TOKEN, **consts) + PROBE + textwrap.dedent(code)
    return grade(problem, source, sandbox=sandbox, settings=settings)


def in_sequence(sandbox: Sandbox, settings: Settings, catalog: Catalog, first: str,
                second: str, **consts: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Grade ``first`` then ``second`` (demo/layout) on one zygote container; both must
    be accepted. Returns what each reported."""
    problem = catalog.get("demo/layout")
    one = grade_on(sandbox, settings, problem, first, **consts)
    assert one.verdict is Verdict.ACCEPTED, describe(one)
    two = grade_on(sandbox, settings, problem, second, **consts)
    assert two.verdict is Verdict.ACCEPTED, describe(two)
    seen_one, seen_two = facts(one), facts(two)
    assert seen_one["host"] == seen_two["host"], "the two submissions ran on two containers"
    return seen_one, seen_two


def test_files_left_in_every_writable_place_are_gone(zygote_sandbox, settings, catalog) -> None:
    first = f"""
        import json, os
        LEFT = []
        for top in ("/", "/tmp", "/dev/shm", "/dev/mqueue", "/var/tmp", "/run", "/dev",
                     os.getcwd(), os.path.expanduser("~")):
            for root, dirs, files in os.walk(top):
                dirs[:] = [d for d in dirs if os.path.join(root, d) not in ("/proc", "/sys")]
                try:
                    with open(os.path.join(root, TOKEN + "-left"), "w") as f:
                        f.write("from the first submission")
                    LEFT.append(root)
                except OSError:
                    pass
        print("@@", json.dumps({{"left": sorted(set(LEFT))}}))

        def layout(num_devices, kernel_in, kernel_out):
            {RIGHT}
    """
    second = f"""
        import json, os
        FOUND = []
        for root, dirs, files in os.walk("/"):
            dirs[:] = [d for d in dirs if os.path.join(root, d) not in ("/proc", "/sys")]
            FOUND += [os.path.join(root, f) for f in files if TOKEN in f]
        print("@@", json.dumps({{"found": FOUND}}))

        def layout(num_devices, kernel_in, kernel_out):
            {RIGHT}
    """
    one, two = in_sequence(zygote_sandbox, settings, catalog, first, second)
    assert {"/tmp", "/dev/shm", "/dev/mqueue"} <= set(one["left"]), one  # the attack ran
    assert two["found"] == [], two


def test_processes_left_behind_die_with_their_submission(zygote_sandbox, settings,
                                                          catalog) -> None:
    first = f"""
        import ctypes, json, os, signal, time

        def linger(name):
            ctypes.CDLL(None).prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME
            for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                signal.signal(sig, signal.SIG_IGN)
            while True:
                with open("/dev/shm/" + TOKEN + "-beat", "w") as f:
                    f.write(str(time.time()))
                time.sleep(0.05)

        if os.fork() == 0:  # double-forked, in a session of its own, ignoring signals
            os.setsid()
            if os.fork() == 0:
                linger(TOKEN)
            os._exit(0)
        os.wait()
        while not os.path.exists("/dev/shm/" + TOKEN + "-beat"):  # the time limit waits
            time.sleep(0.01)
        print("@@", json.dumps({{"beating": os.path.exists("/dev/shm/" + TOKEN + "-beat")}}))

        def layout(num_devices, kernel_in, kernel_out):
            {RIGHT}
    """
    second = f"""
        import json, os
        PIDS = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
        NAMES = [open(f"/proc/{{p}}/comm").read().strip() for p in PIDS]
        print("@@", json.dumps({{"pids": PIDS, "names": NAMES,
                                 "beat": os.path.exists("/dev/shm/" + TOKEN + "-beat")}}))

        def layout(num_devices, kernel_in, kernel_out):
            {RIGHT}
    """
    one, two = in_sequence(zygote_sandbox, settings, catalog, first, second)
    assert one["beating"], one
    assert two["pids"] == [1] and TOKEN not in two["names"] and not two["beat"], two
    assert wait_until(lambda: not host_processes(TOKEN), 60), host_processes(TOKEN)


def test_sockets_left_listening_are_gone(zygote_sandbox, settings, catalog) -> None:
    first = f"""
        import json, os, socket, time
        OPENED = {{}}

        def listen(family, address):
            s = socket.socket(family, socket.SOCK_STREAM)
            s.bind(address)
            s.listen(8)
            return s

        if os.fork() == 0:  # a process keeps them open, waiting for the next submission
            held = [listen(socket.AF_UNIX, "\\0" + TOKEN), listen(socket.AF_UNIX, "/tmp/" + TOKEN),
                    listen(socket.AF_UNIX, "/dev/shm/" + TOKEN),
                    listen(socket.AF_INET, ("127.0.0.1", 47123))]
            open("/tmp/" + TOKEN + "-up", "w").close()
            os.setsid()
            time.sleep(3600)
        while not os.path.exists("/tmp/" + TOKEN + "-up"):  # all bound (the time limit waits)
            time.sleep(0.01)
        for name, family, address in (("abstract", socket.AF_UNIX, "\\0" + TOKEN),
                                      ("tmp", socket.AF_UNIX, "/tmp/" + TOKEN),
                                      ("tcp", socket.AF_INET, ("127.0.0.1", 47123))):
            with socket.socket(family, socket.SOCK_STREAM) as c:
                OPENED[name] = c.connect_ex(address) == 0
        print("@@", json.dumps({{"opened": OPENED}}))

        def layout(num_devices, kernel_in, kernel_out):
            {RIGHT}
    """
    second = f"""
        import errno, json, socket
        SEEN = {{}}
        for name, family, address in (("abstract", socket.AF_UNIX, "\\0" + TOKEN),
                                      ("tmp", socket.AF_UNIX, "/tmp/" + TOKEN),
                                      ("shm", socket.AF_UNIX, "/dev/shm/" + TOKEN),
                                      ("tcp", socket.AF_INET, ("127.0.0.1", 47123))):
            with socket.socket(family, socket.SOCK_STREAM) as c:
                SEEN[name] = errno.errorcode.get(c.connect_ex(address), "connected")
        print("@@", json.dumps({{"seen": SEEN}}))

        def layout(num_devices, kernel_in, kernel_out):
            {RIGHT}
    """
    one, two = in_sequence(zygote_sandbox, settings, catalog, first, second)
    assert all(one["opened"].values()), one
    assert two["seen"] == {"abstract": "ECONNREFUSED", "tmp": "ENOENT", "shm": "ENOENT",
                           "tcp": "ECONNREFUSED"}, two


def test_sysv_and_posix_ipc_objects_are_gone(zygote_sandbox, settings, catalog) -> None:
    ipc = """
        import ctypes, errno, json, os
        libc = ctypes.CDLL(None, use_errno=True)
        KEY, IPC_CREAT = 0x4A4A5A, 0o1000

        def call(fn, *args):
            result = fn(*args)
            return "ok" if result >= 0 else errno.errorcode[ctypes.get_errno()]
    """
    first = ipc + f"""
        MADE = {{"shm": call(libc.shmget, KEY, 4096, IPC_CREAT | 0o666),
                 "sem": call(libc.semget, KEY, 1, IPC_CREAT | 0o666),
                 "msg": call(libc.msgget, KEY, IPC_CREAT | 0o666),
                 "mq": call(libc.mq_open, ("/" + TOKEN).encode(), os.O_CREAT | os.O_RDWR,
                            0o666, None)}}
        print("@@", json.dumps({{"made": MADE}}))

        def layout(num_devices, kernel_in, kernel_out):
            {RIGHT}
    """
    second = ipc + f"""
        SEEN = {{"shm": call(libc.shmget, KEY, 0, 0), "sem": call(libc.semget, KEY, 0, 0),
                 "msg": call(libc.msgget, KEY, 0),
                 "mq": call(libc.mq_open, ("/" + TOKEN).encode(), os.O_RDWR),
                 "sysvipc": [open("/proc/sysvipc/" + k).read().splitlines()[1:]
                             for k in ("shm", "sem", "msg")]}}
        print("@@", json.dumps({{"seen": SEEN}}))

        def layout(num_devices, kernel_in, kernel_out):
            {RIGHT}
    """
    one, two = in_sequence(zygote_sandbox, settings, catalog, first, second)
    assert set(one["made"].values()) == {"ok"}, one
    assert two["seen"] == {"shm": "ENOENT", "sem": "ENOENT", "msg": "ENOENT", "mq": "ENOENT",
                           "sysvipc": [[], [], []]}, two


def test_signals_and_ptrace_reach_neither_the_zygote_nor_the_next_child(
        zygote_sandbox, settings, catalog) -> None:
    first = f"""
        import ctypes, errno, json, os, signal
        libc = ctypes.CDLL(None, use_errno=True)

        def outcome(result):
            return "ok" if result >= 0 else errno.errorcode[ctypes.get_errno()]

        def kill(pid, sig):
            try:
                os.kill(pid, sig)
                return "sent"
            except OSError as exc:
                return errno.errorcode[exc.errno]

        SEEN = {{"visible": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
                 "kill -1": kill(-1, signal.SIGKILL), "ppid": os.getppid()}}
        # The zygote, its relay and the keeper have PIDs in the container's namespace,
        # somewhere below a few hundred: aim at every one of them (but our own threads).
        OTHERS = [p for p in range(2, 400) if str(p) not in os.listdir("/proc/self/task")]
        SEEN["kill"] = sorted({{kill(p, signal.SIGKILL) for p in OTHERS}})
        SEEN["ptrace"] = sorted({{outcome(libc.ptrace(16, p, None, None))
                                  for p in OTHERS}})  # PTRACE_ATTACH
        SEEN["pidfd"] = sorted({{outcome(libc.syscall(434, p, 0)) for p in OTHERS}})
        print("@@", json.dumps({{"first": SEEN}}))

        def layout(num_devices, kernel_in, kernel_out):
            {RIGHT}
    """
    one, two = in_sequence(zygote_sandbox, settings, catalog, first, f"""
        def layout(num_devices, kernel_in, kernel_out):
            {RIGHT}
    """)
    seen = one["first"]
    assert seen["visible"] == [1] and seen["ppid"] == 0, seen
    assert seen["kill -1"] == "ESRCH" and seen["kill"] == ["ESRCH"], seen
    assert seen["ptrace"] == ["ESRCH"] and seen["pidfd"] == ["ESRCH"], seen


def test_the_fresh_mounts_cannot_be_undone(zygote_sandbox, settings, catalog) -> None:
    first = f"""
        import ctypes, errno, json
        libc = ctypes.CDLL(None, use_errno=True)

        def outcome(result):
            return "ok" if result == 0 else errno.errorcode[ctypes.get_errno()]

        SEEN = {{
            "umount /tmp": outcome(libc.umount2(b"/tmp", 2)),  # MNT_DETACH
            "umount /proc": outcome(libc.umount2(b"/proc", 2)),
            "umount /dev/shm": outcome(libc.umount2(b"/dev/shm", 0)),
            "mount tmpfs": outcome(libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 0, None)),
            "mount proc": outcome(libc.mount(b"proc", b"/proc", b"proc", 0, None)),
            "unshare user+mount": outcome(libc.unshare(0x10000000 | 0x00020000)),
            "unshare as the zygote": outcome(libc.unshare(UNSHARE_FLAGS)),
            "setns": outcome(libc.setns(0, 0)),
            "pivot_root": outcome(libc.syscall(155, b"/tmp", b"/tmp")),
            "chroot": outcome(libc.chroot(b"/tmp")),
        }}
        print("@@", json.dumps({{"seen": SEEN,
                                 "status": [l for l in open("/proc/self/status")
                                            if l.startswith(("Cap", "Seccomp", "NoNew"))]}}))

        def layout(num_devices, kernel_in, kernel_out):
            {RIGHT}
    """
    one, _ = in_sequence(zygote_sandbox, settings, catalog, first, f"""
        def layout(num_devices, kernel_in, kernel_out):
            {RIGHT}
    """, UNSHARE_FLAGS=UNSHARE_FLAGS)
    assert set(one["seen"].values()) <= {"EPERM", "EINVAL", "EBADF"}, one
    assert one["seen"]["umount /tmp"] == one["seen"]["mount tmpfs"] == "EPERM", one
    assert one["seen"]["unshare as the zygote"] == "EPERM", one
    assert all(line.split()[1] == "0000000000000000"
               for line in one["status"] if line.startswith("Cap")), one


def test_writes_to_proc_and_docker_masks_hold_in_the_child(zygote_sandbox, settings,
                                                            catalog) -> None:
    first = f"""
        import errno, json, os

        def write(path, text="1"):
            try:
                with open(path, "w") as f:
                    f.write(text)
                return "written"
            except OSError as exc:
                return errno.errorcode.get(exc.errno, str(exc.errno))

        def read(path):
            try:
                with open(path, "rb") as f:
                    return "read " + str(len(f.read(4096)))
            except OSError as exc:
                return errno.errorcode.get(exc.errno, str(exc.errno))

        SEEN = {{
            "sysrq": write("/proc/sysrq-trigger", "h"),
            "core_pattern": write("/proc/sys/kernel/core_pattern", "|/tmp/x"),
            "oom lower": write("/proc/1/oom_score_adj", "-1000"),
            "keys": read("/proc/keys"), "timer_list": read("/proc/timer_list"),
            "kcore": read("/proc/kcore"),
            "mounts": [l.split()[1] for l in open("/proc/self/mounts")
                       if l.split()[1].startswith(("/proc/", "/sys/firmware"))],
        }}
        print("@@", json.dumps({{"seen": SEEN}}))

        def layout(num_devices, kernel_in, kernel_out):
            {RIGHT}
    """
    one, _ = in_sequence(zygote_sandbox, settings, catalog, first, f"""
        def layout(num_devices, kernel_in, kernel_out):
            {RIGHT}
    """)
    seen = one["seen"]
    assert seen["sysrq"] in ("EROFS", "EACCES", "ENOENT"), seen
    assert seen["core_pattern"] in ("EROFS", "EACCES"), seen
    assert seen["oom lower"] == "EACCES", seen
    for masked in ("keys", "timer_list", "kcore"):
        assert seen[masked] in ("read 0", "ENOENT"), seen  # /dev/null laid over it
    assert {"/proc/sys", "/proc/keys", "/proc/timer_list", "/sys/firmware"} <= set(
        seen["mounts"]), seen


def test_no_descriptor_of_the_zygote_is_inherited(zygote_sandbox, settings, catalog) -> None:
    first = f"""
        import json, os, stat
        FDS = {{}}
        for fd in sorted(int(n) for n in os.listdir("/proc/self/fd")):
            try:
                FDS[fd] = os.readlink(f"/proc/self/fd/{{fd}}")
            except OSError:
                pass
        print("@@", json.dumps({{"fds": FDS}}))

        def layout(num_devices, kernel_in, kernel_out):
            {RIGHT}
    """
    one, _ = in_sequence(zygote_sandbox, settings, catalog, first, f"""
        def layout(num_devices, kernel_in, kernel_out):
            {RIGHT}
    """)
    targets = list(one["fds"].values())
    assert not any(t.startswith(("socket:", "anon_inode:[pidfd]", "anon_inode:[eventpoll]"))
                   for t in targets), one
    # The harness's own: its input and its protocol descriptor (two pipes to the relay),
    # and what it opened itself (its output files, /dev/null, /proc/self/fd).
    assert sum(t.startswith("pipe:") for t in targets) == 2, one


def test_environment_and_module_state_do_not_carry_over(zygote_sandbox, settings,
                                                        catalog) -> None:
    first = f"""
        import builtins, functools, json, os
        import jax, jax.numpy as jnp, numpy as np
        os.environ["LEFT_" + TOKEN] = "1"
        os.putenv("PUT_" + TOKEN, "1")
        np.add = lambda *a, **k: 0
        jnp.sum = lambda *a, **k: 0
        jax.jit = lambda f, *a, **k: (lambda *x, **y: 0)
        functools.reduce = None
        setattr(builtins, "LEFT_" + TOKEN, True)
        import sys
        sys.modules["numpy"].LEFT = TOKEN

        def layout(num_devices, kernel_in, kernel_out):
            {RIGHT}
    """
    second = f"""
        import builtins, functools, json, os, sys
        import jax, jax.numpy as jnp, numpy as np
        SEEN = {{
            "environ": [k for k in os.environ if TOKEN in k],
            "proc environ": TOKEN in open("/proc/self/environ").read(),
            "np.add": int(np.add(2, 3)), "jnp.sum": int(jnp.sum(jnp.arange(4))),
            "jit": int(jax.jit(lambda x: x * 2)(21)),
            "reduce": functools.reduce is not None,
            "builtins": hasattr(builtins, "LEFT_" + TOKEN),
            "numpy": getattr(sys.modules["numpy"], "LEFT", None),
        }}
        print("@@", json.dumps({{"seen": SEEN}}))

        def layout(num_devices, kernel_in, kernel_out):
            {RIGHT}
    """
    _, two = in_sequence(zygote_sandbox, settings, catalog, first, second)
    assert two["seen"] == {"environ": [], "proc environ": False, "np.add": 5, "jnp.sum": 6,
                           "jit": 42, "reduce": True, "builtins": False, "numpy": None}, two


def test_nothing_of_the_previous_submission_is_in_the_next_ones_memory(
        zygote_sandbox, settings, catalog, security_catalog) -> None:
    """The first submission's code (a secret constant) and hidden inputs (security/echo's)
    went through the container; the next child is forked from the zygote, which never
    read them (a relay per child carried them, and died), so no byte of them is in the
    next submission's memory."""
    echo = security_catalog.get("security/echo")
    first = grade_on(zygote_sandbox, settings, echo, f"""
        SECRET = {CODE_SECRET!r}

        def echo(secret):
            return int(secret)
    """)
    assert first.verdict is Verdict.ACCEPTED, describe(first)
    heads = {**INPUT_HEADS, **CODE_HEADS}
    second = grade_on(zygote_sandbox, settings, catalog.get("demo/layout"),
                      header(VAULT_HEADS=heads) + SEARCH_CODE + f"""
import json
SIZE, FOUND = SCAN_MEMORY()
print("@@", json.dumps({{"bytes": SIZE, "found": sorted(FOUND)}}))

def layout(num_devices, kernel_in, kernel_out):
    {RIGHT}
""")
    assert second.verdict is Verdict.ACCEPTED, describe(second)
    seen = facts(second)
    assert seen["host"] == facts(first)["host"], "the two submissions ran on two containers"
    assert seen["bytes"] > 100 << 20, seen  # the scan read the whole address space
    assert seen["found"] == [], seen


# -- kernel accounting: nothing of one child's counters reaches the next, and the memory
# limit's victim is always the child (issue 20, items 5 and 6). Both ways a judge may
# account children: in groups of their own ("children", where the judge may make them:
# here, root on a cgroup v1 host), and in the container's groups only ("container", as a
# judge without that access). --------------------------------------------------------


@pytest.fixture(scope="module", params=["children", "container"])
def accounted(request: pytest.FixtureRequest, settings: Settings) -> Iterator[Sandbox]:
    sandbox = get_sandbox("zygote", settings.model_copy(
        update={"zygote_count": 1, "zygote_accounting": request.param}))
    yield sandbox
    sandbox.close()


# Every file of the cgroup file system the child can reach, and what it says: the paths
# the child's /proc/self/cgroup names, under every place it could be mounted.
READ_COUNTERS = textwrap.dedent("""
    import json, os
    FOUND = {}
    PLACES = ["/sys/fs/cgroup"]
    for line in open("/proc/self/cgroup"):
        _, controllers, path = line.strip().split(":", 2)
        for c in (controllers.split(",") if controllers else [""]):
            PLACES += [f"/sys/fs/cgroup/{c.removeprefix('name=')}{path}",
                       f"/sys/fs/cgroup/{c.removeprefix('name=')}"]
    for place in dict.fromkeys(PLACES):
        for root, dirs, files in os.walk(place):
            for name in files:
                try:
                    with open(os.path.join(root, name)) as f:
                        FOUND[os.path.join(root, name)] = f.read(300)
                except OSError:
                    pass
    """)
LAYOUT = textwrap.dedent(f"""
    def layout(num_devices, kernel_in, kernel_out):
        {RIGHT}
    """)


def test_no_kernel_counter_of_one_child_is_readable_by_the_next(accounted, settings,
                                                                 catalog) -> None:
    first = textwrap.dedent("""
        import json, os, time
        HOG = bytearray(300 << 20)
        for i in range(0, len(HOG), 4096):  # resident: the peak counters see it
            HOG[i] = 1
        KIDS = []
        for _ in range(24):  # processes and threads: the pids counters see them
            pid = os.fork()
            if pid == 0:
                time.sleep(0.3)
                os._exit(0)
            KIDS.append(pid)
        for pid in KIDS:
            os.waitpid(pid, 0)
        END = time.process_time() + 0.5
        while time.process_time() < END:  # CPU time: the cpuacct counters see it
            pass
        del HOG
    """) + READ_COUNTERS + 'print("@@", json.dumps({"first": sorted(FOUND)}))\n' + LAYOUT
    second = READ_COUNTERS + 'print("@@", json.dumps({"second": FOUND}))\n' + LAYOUT
    one, two = in_sequence(accounted, settings, catalog, first, second)
    # Without the masks the second child reads the first's peak memory, CPU time and
    # process count from its container's groups (memory.max_usage_in_bytes, cpuacct.usage,
    # pids.*): it finds no file of them at all.
    assert one["first"] == [] and two["second"] == {}, two


def test_the_memory_limit_kills_the_child_never_the_zygote(accounted, settings,
                                                           catalog) -> None:
    """The child tries to make itself the last to die (oom_score_adj 0) and spreads its
    memory over small processes of their own, each smaller than the zygote, to make the
    memory limit kill the zygote instead. Its verdict is memory_limit_exceeded either
    way, and the sandbox serves the next submission."""
    problem = catalog.get("demo/layout")
    report = grade_on(accounted, settings, problem, f"""
        import json, os, subprocess, sys, time

        def lower():
            try:
                with open("/proc/self/oom_score_adj", "w") as f:
                    f.write("0")
                return True
            except OSError:
                return False

        LOWERED = lower()
        print("@@", json.dumps({{"lowered": LOWERED}}))
        SMALL = (
            "import time\\n"
            "try:\\n"
            "    open('/proc/self/oom_score_adj', 'w').write('0')\\n"
            "except OSError:\\n"
            "    pass\\n"
            "hog = bytearray(120 << 20)\\n"
            "for i in range(0, len(hog), 4096):\\n"
            "    hog[i] = 1\\n"
            "time.sleep(60)\\n")

        def layout(num_devices, kernel_in, kernel_out):
            if num_devices == 4:
                kids = [subprocess.Popen([sys.executable, "-c", SMALL]) for _ in range(14)]
                deadline = time.monotonic() + 8
                while time.monotonic() < deadline and all(k.poll() is None for k in kids):
                    time.sleep(0.05)
            {RIGHT}
    """)
    assert report.verdict is Verdict.MEMORY_LIMIT_EXCEEDED, describe(report)
    assert report.tests[0].verdict is Verdict.MEMORY_LIMIT_EXCEEDED, describe(report)
    after = grade_on(accounted, settings, problem, f"""
        def layout(num_devices, kernel_in, kernel_out):
            {RIGHT}
    """)
    assert after.verdict is Verdict.ACCEPTED, describe(after)


def test_each_childs_groups_are_its_own_and_go_with_it(settings, catalog) -> None:
    """Where the judge may make them, a child runs in control groups of its own (its own
    memory limit, CPU counter and process limit), named at random, and they are removed
    when it ends."""
    sandbox = get_sandbox("zygote", settings.model_copy(
        update={"zygote_count": 1, "zygote_accounting": "children"}))
    try:
        probe = f"""
            import json
            print("@@", json.dumps({{"groups": open("/proc/self/cgroup").read()}}))

            def layout(num_devices, kernel_in, kernel_out):
                {RIGHT}
        """
        one, two = in_sequence(sandbox, settings, catalog, probe, probe)
        zygote = sandbox.zygotes.ready.queue[0]  # type: ignore[attr-defined]
        groups = [line.split(":", 2) for line in one["groups"].splitlines()]
        own = {c: p for _, c, p in groups if c in ("memory", "cpuacct", "pids")}
        container = zygote.cgroup.dirs["memory"].name
        assert all(p.split("/")[-2] == container and p.split("/")[-1].startswith("child-")
                   for p in own.values()), one
        assert len(set(own.values())) == 1 and own["memory"] not in two["groups"], (one, two)
        # the child's groups are gone once it ended; the container's are left as they were
        for folder in zygote.cgroup.dirs.values():
            assert not [p.name for p in folder.iterdir() if p.name.startswith("child-")]
        memory_limit = (zygote.cgroup.dirs["memory"] / "memory.limit_in_bytes").read_text()
        assert int(memory_limit) == settings.pool_memory_mb << 20
    finally:
        sandbox.close()
