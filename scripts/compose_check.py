"""Run compose.yaml for real and prove it grades: the driver of scripts/compose-check.sh.

The shell script makes the images (stand-ins where no registry answers) and picks the
compose binary; this brings the stack up with two grading worker containers, as two
hosts would run them, and checks what a department relies on:

1. ``/readyz`` answers ready; an API key is made with the documented command.
2. A batch of filed example submissions of the seed problems (the folder an example is
   filed under is its expected verdict) is graded, each verdict as filed, and both worker
   containers stored gradings.
3. One worker container is frozen mid-batch while it holds a grading, then killed
   (SIGKILL): its grading is marked lost by the sweeper and graded again on the other
   container; nothing is lost and nothing is graded twice.
4. The TLS proxy (profile ``tls``, Caddy with its own CA here) serves ``/readyz`` and the
   LTI key set over HTTPS for the public name, keeps ``/metrics`` inside, and the tool's
   LTI configuration names the public ``https://`` URLs.
5. The database is backed up with ``pg_dump``, dropped, restored with ``pg_restore`` (the
   commands docker/README.md documents), and a verdict is still readable through the API.
6. ``down -v`` leaves no container, volume or network of the project, and no sandbox
   container of its workers.

The last line is ``compose: N graded, W workers, L lost``; the exit status is 0 only when
everything above held. Standard library only: it runs on the host's python3 before any
virtual environment exists.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shlex
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# Problems with no compile-heavy tests, so a batch measures the stack and not XLA. Examples
# filed under time_limit_exceeded are left out: they take their whole limit by design.
PROBLEMS = ("jax-sharding/partitionspec-layout", "jax-sharding/shard-shape-accounting",
            "jax-sharding/mesh-init-simulation")
VERDICTS = ("accepted", "wrong_answer", "compile_error", "runtime_error")
WORKERS = 2
DOMAIN = "judge.test"  # the public name the TLS proxy serves, resolved to 127.0.0.1 here

# What the check changes in the deployment, and why: each worker container is one grading
# process (a 1-core host; the default, one per core, would start 2 x 2 zygote processes on
# this machine's 2 cores); a killed worker is found within seconds (heartbeat 2 s, stale
# after 10 s, sweep every 2 s) instead of 30; a message the killed worker had fetched but not
# started is published again after 120 s instead of an hour.
OVERRIDE = """\
services:
  api:
    build:
      network: host
    environment: &check
      JAXJUDGE_HEARTBEAT_SECONDS: "2"
      JAXJUDGE_STALE_AFTER_SECONDS: "10"
      JAXJUDGE_SWEEP_SECONDS: "2"
      JAXJUDGE_REQUEUE_AFTER_SECONDS: "120"
  worker:
    environment:
      <<: *check
      JAXJUDGE_WORKER_CONCURRENCY: "1"
  sweeper:
    environment: *check
  webhooks:
    environment: *check
"""


class CheckFailed(Exception):
    """Something the deployment must do, it did not."""


def log(message: str) -> None:
    print(f"compose-check: {message}", file=sys.stderr, flush=True)


def wait_for(what: str, deadline_s: float, probe: Callable[[], Any], every: float = 1.0) -> Any:
    """Call ``probe`` until it returns something truthy; fail after ``deadline_s``."""
    end = time.monotonic() + deadline_s
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > end:
            raise CheckFailed(f"{what}: not within {deadline_s:.0f} s")
        time.sleep(every)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Stack:
    """The compose project under test, through the compose CLI and the HTTP API."""

    def __init__(self, compose: list[str], project: str, override: Path, port: int,
                 env: dict[str, str], profiles: tuple[str, ...] = ("tls",)) -> None:
        self.base = [*compose, *(f for p in profiles for f in ("--profile", p)),
                     "-p", project, "-f", str(REPO / "compose.yaml"), "-f", str(override)]
        self.project = project
        self.url = f"http://127.0.0.1:{port}"
        self.env = env
        self.key = ""

    # -- compose and docker ------------------------------------------------------------
    def compose(self, *args: str, check: bool = True, timeout: float = 600,
                stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        done = subprocess.run([*self.base, *args], cwd=REPO, env=self.env, input=stdin,
                              capture_output=True, timeout=timeout)
        if check and done.returncode != 0:
            raise CheckFailed(f"`compose {' '.join(args)}` exited {done.returncode}: "
                              + done.stderr.decode(errors="replace").strip()[-600:])
        return done

    def containers(self, service: str) -> list[str]:
        out = self.compose("ps", "-q", service).stdout.decode().split()
        return [c for c in out if c]

    def sql(self, query: str) -> list[list[str]]:
        """Rows from psql in the postgres container (unaligned, tab-separated)."""
        out = self.compose("exec", "-T", "postgres", "psql", "-U", "jaxjudge", "-d",
                           "jaxjudge", "-v", "ON_ERROR_STOP=1", "-AtF", "\t", "-c",
                           query).stdout.decode()
        return [line.split("\t") for line in out.splitlines() if line]

    def database_exists(self) -> bool:
        out = self.compose("exec", "-T", "postgres", "psql", "-U", "jaxjudge", "-d",
                           "postgres", "-Atc", "select count(*) from pg_database where "
                           "datname = 'jaxjudge'").stdout.decode().strip()
        return out != "0"

    # -- HTTP --------------------------------------------------------------------------
    def http(self, method: str, path: str, body: Any = None,
             timeout: float = 60) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self.key:
            request.add_header("Authorization", f"Bearer {self.key}")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        except (urllib.error.URLError, OSError):
            return 0, None
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode(errors="replace")


def examples(count: int) -> list[tuple[str, str, str, str]]:
    """``count`` filed examples, round-robin over problems and verdicts:
    (problem, expected verdict, file name, code)."""
    pools: list[list[tuple[str, str, str, str]]] = []
    for problem in PROBLEMS:
        for verdict in VERDICTS:
            folder = REPO / "problemsets" / problem / "submissions" / verdict
            files = sorted(folder.glob("*.py")) if folder.is_dir() else []
            if files:
                pools.append([(problem, verdict, f.name, f.read_text()) for f in files])
    if not pools:
        raise CheckFailed("no filed examples found under problemsets/")
    chosen = []
    for i in range(count):
        pool = pools[i % len(pools)]
        chosen.append(pool[(i // len(pools)) % len(pool)])
    return chosen


def bring_up(stack: Stack) -> None:
    log(f"up: {WORKERS} worker containers")
    stack.compose("up", "-d", "--no-build", "--scale", f"worker={WORKERS}", timeout=900)
    ready = wait_for("/readyz ready (database, broker, a worker with a ready sandbox)", 420,
                     lambda: stack.http("GET", "/readyz", timeout=10)[0] == 200, every=2)
    assert ready
    workers = stack.containers("worker")
    if len(workers) != WORKERS:
        raise CheckFailed(f"{len(workers)} worker containers run, {WORKERS} expected")
    # Both workers answer (each says it is isolated and its sandbox is ready).
    wait_for("both workers ready", 300, lambda: "\n".join(
        line for line in (stack.http("GET", "/metrics", timeout=10)[1] or "").splitlines()
        if line.startswith("jaxjudge_workers ")).endswith(f" {WORKERS}.0"), every=2)
    log("ready: /readyz 200, jaxjudge_workers 2")


def make_key(stack: Stack) -> None:
    out = stack.compose("run", "--rm", "-T", "api", "jaxjudge", "keys", "create",
                        "--tenant", "compose-check", "--role", "admin").stdout.decode()
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    if not lines:
        raise CheckFailed("`jaxjudge keys create` printed no key")
    stack.key = lines[-1]
    status, _ = stack.http("GET", "/v1/problems")
    if status != 200:
        raise CheckFailed(f"the new key was refused: GET /v1/problems answered {status}")


def hostnames(stack: Stack) -> dict[str, str]:
    """Worker container id -> its hostname (what ``gradings.worker`` starts with)."""
    found = {}
    for cid in stack.containers("worker"):
        out = subprocess.run(["docker", "inspect", "-f", "{{.Config.Hostname}}", cid],
                             capture_output=True, text=True, check=True).stdout.strip()
        found[cid] = out
    return found


def stored_by_host(stack: Stack) -> dict[str, int]:
    rows = stack.sql("select split_part(worker, ':', 1), count(*) from gradings "
                     "where outcome = 'stored' group by 1")
    return {host: int(n) for host, n in rows}


def interrupt_one_worker(stack: Stack, total: int) -> tuple[str, list[str]]:
    """Once both workers have stored gradings, kill one (SIGKILL) while it holds a grading
    in progress. Returns the killed host and the gradings its death left open.

    The worker is frozen first (``docker pause``) and killed only when, frozen, it holds a
    grading and none of its database connections is inside a transaction: a store it had
    begun (or a COMMIT still in the server's socket buffer, which shows as "idle in
    transaction") could otherwise land after the kill. What the kill left open is read
    again once the worker is dead; should it be nothing after all (its grading was stored
    in the instant between the freeze and the death), the worker is started again (same
    host name) and another try is made."""
    hosts = hostnames(stack)

    def both_grading() -> bool:
        by_host = stored_by_host(stack)
        return all(by_host.get(h, 0) > 0 for h in hosts.values()) and (
            sum(by_host.values()) >= max(10, total // 5))

    def open_on(host: str) -> list[str]:
        rows = stack.sql("select submission_id from gradings where outcome is null and "
                         f"split_part(worker, ':', 1) = '{host}'")
        return [row[0] for row in rows]

    wait_for("both workers storing verdicts", 600, both_grading, every=1)
    end = time.monotonic() + 300
    while time.monotonic() < end:
        for cid, host in hosts.items():
            subprocess.run(["docker", "pause", cid], check=True, capture_output=True)
            address = subprocess.run(
                ["docker", "inspect", "-f",
                 "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", cid],
                capture_output=True, text=True, check=True).stdout.split()
            busy, held = stack.sql(
                "select (select count(*) from pg_stat_activity where state <> 'idle' and "
                "host(client_addr) = any(array[" + ",".join(f"'{a}'" for a in address)
                + "]::text[])), coalesce((select string_agg(submission_id, ',') from "
                f"gradings where outcome is null and split_part(worker, ':', 1) = '{host}'), "
                "'')")[0]
            if int(busy) != 0 or not held:
                subprocess.run(["docker", "unpause", cid], check=True, capture_output=True)
                continue
            subprocess.run(["docker", "kill", cid], check=True, capture_output=True)
            left = open_on(host)
            if left:
                log(f"killed worker {host} (SIGKILL) while it graded {', '.join(left)}")
                return host, left
            log(f"killed worker {host} just after it stored {held}; starting it again")
            subprocess.run(["docker", "start", cid], check=True, capture_output=True)
        time.sleep(0.3)
    raise CheckFailed("no worker held a grading to interrupt within 300 s")


def post_batches(stack: Stack, chosen: list[tuple[str, str, str, str]], name: str,
                 prefix: str = "s") -> tuple[list[str], dict[tuple[str, str], tuple[str, str]]]:
    """One ``POST /v1/batches`` per problem of ``chosen`` (:func:`examples`), back to back,
    students ``{prefix}0000`` on. Returns the batch ids and (problem, student) -> (verdict
    as filed, file name)."""
    groups: dict[str, list[dict[str, str]]] = {}
    expected: dict[tuple[str, str], tuple[str, str]] = {}
    for i, (problem, verdict, file, code) in enumerate(chosen):
        student = f"{prefix}{i:04d}"
        groups.setdefault(problem, []).append({"student_id": student, "code": code})
        expected[problem, student] = (verdict, file)
    batches = []
    for problem, entries in groups.items():
        status, body = stack.http("POST", "/v1/batches", {
            "problem": problem, "name": name, "submissions": entries}, timeout=120)
        if status != 201 and status != 202 and status != 200:
            raise CheckFailed(f"POST /v1/batches for {problem} answered {status}: {body}")
        batches.append(body["id"])
    return batches, expected


def run_batch(stack: Stack, count: int) -> tuple[int, set[str], dict[str, tuple[str, str]]]:
    """Grade ``count`` filed examples in one batch per problem, killing a worker midway.
    Returns (graded as filed, hosts that stored gradings, submission -> (verdict, file))."""
    batches, expected = post_batches(stack, examples(count), "compose-check")
    log(f"batch: {count} submissions of {len(batches)} problems queued")
    killed_host, held = interrupt_one_worker(stack, count)

    found: dict[str, Any] = {}

    def all_done() -> bool:
        for bid in batches:
            if bid not in found:
                status, body = stack.http("GET", f"/v1/batches/{bid}", timeout=30)
                if status != 200 or not body.get("done"):
                    return False
                found[bid] = body
        return True

    wait_for("every batch done", 900, all_done, every=2)
    graded = 0
    by_id: dict[str, tuple[str, str]] = {}
    problems: list[str] = []
    for body in found.values():
        for member in body["submissions"]:
            verdict, name = expected[body["problem"], member["student_id"]]
            by_id[member["submission_id"]] = (verdict, name)
            if member.get("verdict") == verdict:
                graded += 1
            else:
                problems.append(f"{body['problem']} {verdict}/{name}: got "
                                f"{member.get('verdict')} ({member.get('status')})")
    if problems:
        raise CheckFailed(f"{len(problems)} verdicts not as filed: " + "; ".join(problems[:5]))
    check_recovery(stack, killed_host, held)
    return graded, set(stored_by_host(stack)), by_id


def check_recovery(stack: Stack, killed: str, held: list[str]) -> None:
    """What the killed worker held was marked lost and graded once more elsewhere."""
    for sid in held:
        rows = stack.sql("select split_part(worker, ':', 1), coalesce(outcome, '') from "
                         f"gradings where submission_id = '{sid}' order by attempt")
        outcomes = [(host, outcome) for host, outcome in rows]
        lost = [h for h, o in outcomes if o == "lost"]
        stored = [h for h, o in outcomes if o == "stored"]
        if killed not in lost:
            raise CheckFailed(f"submission {sid}: the killed worker's grading is not "
                              f"marked lost ({outcomes})")
        if len(stored) != 1 or stored[0] == killed:
            raise CheckFailed(f"submission {sid}: not stored exactly once by a live worker "
                              f"({outcomes})")
    twice = stack.sql("select submission_id from gradings where outcome = 'stored' "
                      "group by submission_id having count(*) > 1")
    if twice:
        raise CheckFailed(f"graded twice: {', '.join(r[0] for r in twice[:5])}")
    # The story is in the logs, each line naming its submission: the sweeper's requeue,
    # then the live worker's claim and verdict.
    logs = stack.compose("logs", "--no-color", "sweeper", "worker", timeout=120).stdout.decode()
    for sid in held:
        mine = [line for line in logs.splitlines() if f"submission={sid}" in line]
        if not any("lost, requeued" in line for line in mine) or not any(
                "claimed" in line for line in mine) or not any(
                re.search(r": [a-z_]+ in \d+ ms", line) for line in mine):
            raise CheckFailed(f"the logs do not tell submission {sid}'s story "
                              f"(requeued, claimed, verdict): {mine[:6]}")
    log(f"recovery: {len(held)} interrupted grading(s) marked lost and stored once "
        "elsewhere; the logs name it at each step")


def https_get(port: int, path: str, ca: str, name: str = DOMAIN) -> tuple[int, bytes]:
    """GET https://name:port/path from 127.0.0.1, trusting only ``ca`` (PEM), the name
    checked against the certificate (SNI)."""
    context = ssl.create_default_context(cadata=ca)
    with socket.create_connection(("127.0.0.1", port), timeout=30) as raw, \
            context.wrap_socket(raw, server_hostname=name) as tls:
        tls.sendall(f"GET {path} HTTP/1.1\r\nHost: {name}:{port}\r\nConnection: close\r\n"
                    "\r\n".encode())
        data = b""
        while chunk := tls.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    if b"transfer-encoding: chunked" in head.lower():
        plain, rest = b"", body
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                break
            plain, rest = plain + rest[:size], rest[size + 2:]
        body = plain
    return status, body


def check_tls(stack: Stack, port: int) -> None:
    """The proxy terminates TLS for the public name and passes the API through."""
    def root() -> str:
        done = stack.compose("exec", "-T", "proxy", "cat",
                             "/data/caddy/pki/authorities/local/root.crt", check=False)
        return done.stdout.decode() if done.returncode == 0 else ""

    ca = wait_for("the proxy's certificate authority", 120, root, every=1)
    base = f"https://{DOMAIN}:{port}"

    def ready() -> bool:
        try:
            return https_get(port, "/readyz", ca)[0] == 200
        except (OSError, ssl.SSLError):
            return False

    wait_for(f"{base}/readyz through the proxy", 120, ready, every=1)
    status, _ = https_get(port, "/metrics", ca)
    if status != 404:
        raise CheckFailed(f"{base}/metrics answered {status} through the proxy, not 404")
    status, body = https_get(port, "/lti/jwks.json", ca)
    if status != 200 or "keys" not in json.loads(body):
        raise CheckFailed(f"{base}/lti/jwks.json answered {status}")
    status, body = https_get(port, "/lti/canvas.json", ca)
    if status != 200 or f"{base}/lti/launch" not in body.decode():
        raise CheckFailed(f"the LTI configuration does not name {base}/lti/launch ({status})")
    try:
        https_get(port, "/readyz", ca, name="other.test")
    except ssl.SSLError:
        pass
    else:
        raise CheckFailed("the proxy served a certificate for a name it does not hold")
    log(f"tls: {base} serves /readyz and the key set, /metrics is 404, LTI names https")


def backup_and_restore(stack: Stack, workdir: Path, sid: str) -> None:
    """The documented backup and restore (docker/README.md, "Backups"), then the same
    verdict through the API."""
    _, before = stack.http("GET", f"/v1/submissions/{sid}")
    dump = workdir / "jaxjudge.dump"
    with dump.open("wb") as out:
        done = subprocess.run([*stack.base, "exec", "-T", "postgres", "pg_dump", "-U",
                               "jaxjudge", "-Fc", "jaxjudge"], cwd=REPO, env=stack.env,
                              stdout=out, stderr=subprocess.PIPE, timeout=300)
    if done.returncode != 0 or dump.stat().st_size < 1000:
        raise CheckFailed(f"pg_dump failed: {done.stderr.decode(errors='replace')[-300:]}")
    writers = ("api", "worker", "webhooks", "sweeper")
    stack.compose("stop", *writers, timeout=300)
    stack.compose("exec", "-T", "postgres", "dropdb", "-U", "jaxjudge", "--force", "jaxjudge")
    if stack.database_exists():
        raise CheckFailed("the database is still there after dropdb")
    stack.compose("exec", "-T", "postgres", "createdb", "-U", "jaxjudge", "-O", "jaxjudge",
                  "jaxjudge")
    stack.compose("exec", "-T", "postgres", "pg_restore", "-U", "jaxjudge", "-d", "jaxjudge",
                  "--exit-on-error", stdin=dump.read_bytes(), timeout=300)
    stack.compose("start", *writers, timeout=300)
    wait_for("/readyz after the restore", 300,
             lambda: stack.http("GET", "/readyz", timeout=10)[0] == 200, every=2)
    status, after = stack.http("GET", f"/v1/submissions/{sid}")
    if status != 200 or after.get("verdict") != before.get("verdict") or (
            after.get("report") != before.get("report")):
        raise CheckFailed(f"submission {sid} after the restore: {status} {str(after)[:200]}")
    log(f"backup: pg_dump {dump.stat().st_size} bytes, dropped, restored; {sid} still "
        f"{after['verdict']}")


def tear_down(stack: Stack, hosts: list[str]) -> None:
    stack.compose("down", "-v", "--remove-orphans", "-t", "120", timeout=600)
    # Sandboxes of a killed worker outlive it (the reaper removes them after
    # JAXJUDGE_DOCKER_REAP_AFTER_SECONDS); remove those of this project's workers now.
    listed = subprocess.run(["docker", "ps", "-a", "--filter", "label=org.jaxjudge.sandbox",
                             "--format", '{{.ID}} {{.Label "org.jaxjudge.owner"}}'],
                            capture_output=True, text=True, check=True).stdout.splitlines()
    for line in listed:
        cid, _, owner = line.partition(" ")
        if owner.split(":")[0] in hosts:
            subprocess.run(["docker", "rm", "-f", cid], capture_output=True)
    left = subprocess.run(["docker", "ps", "-aq", "--filter",
                           f"label=com.docker.compose.project={stack.project}"],
                          capture_output=True, text=True, check=True).stdout.split()
    volumes = subprocess.run(["docker", "volume", "ls", "-q", "--filter",
                              f"label=com.docker.compose.project={stack.project}"],
                             capture_output=True, text=True, check=True).stdout.split()
    networks = subprocess.run(["docker", "network", "ls", "-q", "--filter",
                               f"label=com.docker.compose.project={stack.project}"],
                              capture_output=True, text=True, check=True).stdout.split()
    if left or volumes or networks:
        raise CheckFailed(f"down -v left {len(left)} containers, {len(volumes)} volumes, "
                          f"{len(networks)} networks")


def save_logs(stack: Stack, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    done = stack.compose("logs", "--no-color", "--tail", "400", check=False, timeout=120)
    (folder / "compose.log").write_bytes(done.stdout + done.stderr)
    log(f"logs saved in {folder / 'compose.log'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=120, help="submissions (default 120)")
    parser.add_argument("--project", default="jaxjudgecheck", help="compose project name")
    parser.add_argument("--keep", action="store_true", help="leave the stack running")
    args = parser.parse_args(argv)
    if not 20 <= args.batch <= 1000:
        print("compose-check: --batch must be 20 to 1000", file=sys.stderr)
        return 2
    compose = shlex.split(os.environ.get("COMPOSE", "docker-compose"))
    workdir = Path(tempfile.mkdtemp(prefix="compose-check-"))
    override = workdir / "compose.check.yaml"
    override.write_text(OVERRIDE)
    port, https, http = free_port(), free_port(), free_port()
    env = {**os.environ, "JAXJUDGE_PORT": str(port),
           "JAXJUDGE_SECRET_KEY": secrets.token_urlsafe(48),
           "POSTGRES_PASSWORD": secrets.token_hex(16),
           "JAXJUDGE_DOMAIN": DOMAIN, "JAXJUDGE_TLS": "internal",
           "JAXJUDGE_HTTPS_PORT": str(https), "JAXJUDGE_HTTP_PORT": str(http),
           "JAXJUDGE_PUBLIC_URL": f"https://{DOMAIN}:{https}",
           "JAXJUDGE_TRUSTED_PROXY_HOPS": "1"}
    stack = Stack(compose, args.project, override, port, env)
    stack.compose("down", "-v", "--remove-orphans", "-t", "30", check=False)  # a past run's
    started = time.monotonic()
    graded, lost = 0, args.batch
    hosts: set[str] = set()
    ok = False
    try:
        bring_up(stack)
        make_key(stack)
        check_tls(stack, https)
        graded, hosts, by_id = run_batch(stack, args.batch)
        lost = args.batch - graded
        if len(hosts) < WORKERS:
            raise CheckFailed(f"only {len(hosts)} worker(s) stored gradings")
        accepted = next(sid for sid, (verdict, _) in by_id.items() if verdict == "accepted")
        backup_and_restore(stack, workdir, accepted)
        ok = True
    except CheckFailed as failure:
        log(f"FAILED: {failure}")
    finally:
        if not ok:
            save_logs(stack, REPO / "var" / "compose-check")
        if args.keep:
            log(f"kept: {stack.url} (compose -p {args.project} down -v to remove)")
        else:
            try:
                tear_down(stack, sorted(hosts | set(hostnames_safe(stack))))
            except CheckFailed as failure:
                log(f"FAILED: {failure}")
                ok = False
    log(f"{time.monotonic() - started:.0f} s")
    print(f"compose: {graded} graded, {len(hosts)} workers, {lost} lost")
    return 0 if ok and lost == 0 and len(hosts) >= WORKERS and graded >= args.batch else 1


def hostnames_safe(stack: Stack) -> list[str]:
    try:
        return list(hostnames(stack).values())
    except (CheckFailed, subprocess.CalledProcessError):
        return []


if __name__ == "__main__":
    sys.exit(main())
