"""The build task's body: an uploaded package version built and verified in the sandbox.

The package is untrusted: its reference and its example submissions run only in the
worker's sandbox (the same one, with the same isolation, as any submission), never in
this process. On the trusted side the build only unpacks the checked files, makes the
inputs from problem.yaml (bounded when the upload was checked; a ``tests.generator`` is
refused) and compares. The steps, recorded as they end so the author sees progress:

1. ``build``: the reference runs on every test; its outputs become the expected values;
2. ``data``, ``inputs``, ``reference.py``, then each ``submissions/<verdict>/<name>.py``:
   :func:`judge.verify.verify`, the checks ``jaxjudge verify`` makes.

All pass: the version is ``ready`` (its test data stored with it) with the weaknesses
:func:`judge.verify.weaknesses` finds, and goes live if it is the first or was uploaded
with ``publish``. Any fails, or the build runs past the tenant's ``build_seconds``:
``failed``, with every failure and its reason. The sandbox unavailable: back to the
queue after a backoff, as a grading would be (:mod:`workers.retry`).
"""

from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded

from judge.build import build
from judge.errors import BuildFailed, JudgeError, ProblemError, SandboxError
from judge.problem import Problem
from judge.verify import Check, check_examples, explain, regrade_reference, verify, weaknesses
from service.builds import (
    BuildClaim,
    build_heartbeat,
    claim_build,
    finish_build,
    postpone_build,
    record_steps,
)
from service.packages import files_under, pack, unpack
from service.problemsets import quotas_of
from workers.context import Context
from workers.retry import postpone_or_give_up

log = logging.getLogger(__name__)


class _Over(Exception):
    """The build ran past the tenant's build time."""


def run(ctx: Context, version_id: str) -> str:
    """Build ``version_id`` if it is ours to build; returns what happened."""
    taken = claim_build(ctx.db, version_id, stale_after=ctx.settings.stale_after_seconds)
    if taken is None:
        return "skipped"
    with ctx.db.session() as s:
        budget = quotas_of(s, ctx.settings, taken.tenant_id).build_seconds
    started = time.monotonic()
    steps: list[dict[str, Any]] = []
    try:
        with ctx.beating(lambda: build_heartbeat(ctx.db, version_id, taken.attempt),
                         f"build {version_id}"), \
                tempfile.TemporaryDirectory(prefix="jaxjudge-build-") as scratch:
            root = Path(scratch) / taken.problem.split("/", 1)[1]
            unpack(taken.files, root)
            data, error, weak = _build(ctx, taken, root, steps, started + budget)
    except SandboxError as exc:
        reason = str(exc) or type(exc).__name__
        why = postpone_or_give_up(
            ctx.settings, f"build {version_id}", taken.failures, reason,
            lambda delay: postpone_build(ctx.db, version_id, taken.attempt, delay=delay,
                                         error=f"waiting for the sandbox: {reason}"),
            redis=ctx.redis)
        if why is None:
            return "postponed"
        data, error, weak = None, why, []
    except SoftTimeLimitExceeded:
        data, error, weak = None, "the build ran past the judge's longest build time", []
    except _Over:
        data, error, weak = None, (f"the build took longer than the tenant's build time of "
                                   f"{budget:g} s"), []
    except Exception as exc:  # a fault of the judge: the build ends, it is not retried
        log.exception("build %s failed inside the judge", version_id)
        data, error, weak = None, f"the build failed inside the judge ({type(exc).__name__})", []
    seconds = time.monotonic() - started
    if not finish_build(ctx.db, version_id, taken.attempt, data=data, error=error,
                        weaknesses=weak, seconds=seconds):
        return "superseded"
    log.info("build %s of %s %s: %s in %.1f s", version_id, taken.problem, taken.version,
             "ready" if error is None else "failed", seconds)
    return "ready" if error is None else "failed"


def _build(ctx: Context, taken: BuildClaim, root: Path, steps: list[dict[str, Any]],
           deadline: float) -> tuple[bytes | None, str | None, list[str]]:
    """(test data, None, weaknesses) when every check passes, else (None, why, [])."""

    def step(subject: str, expected: str, got: str, detail: str = "") -> None:
        steps.append({"subject": subject, "expected": expected, "got": got,
                      "ok": expected == got, "detail": detail[:2000]})
        record_steps(ctx.db, taken.version_id, taken.attempt, steps)

    try:
        problem = Problem.load(taken.problem, root, version=taken.version)
    except ProblemError as exc:
        return None, str(exc), []
    if problem.spec.tests.generator is not None:  # refused at upload; never run here
        return None, "an uploaded package may not name a tests.generator", []
    wanted = "reference outputs recorded"
    try:
        build(problem, sandbox=ctx.sandbox, settings=ctx.judge)
    except ProblemError as exc:
        step("build", wanted, "the reference failed", str(exc).removeprefix(f"{problem.id}: "))
        passed = exc.passed if isinstance(exc, BuildFailed) else []
        # The examples on the tests the reference passed: one build shows all to fix.
        try:
            on_passed = check_examples(problem, passed, sandbox=ctx.sandbox, settings=ctx.judge)
        except JudgeError:  # an example the checks cannot read: the build's error says enough
            on_passed = []
        for check in on_passed:
            step(check.subject, check.expected, check.got,
                 f"on the {len(passed)} test(s) the reference passed: "
                 + explain(check.report, check.ok))
        if time.monotonic() > deadline:
            raise _Over from None
        wrong = [c.subject for c in on_passed if not c.ok]
        also = (f"; and on the {len(passed)} test(s) the reference passed, {len(wrong)} "
                f"example(s) got the wrong verdict: {', '.join(wrong)}") if wrong else ""
        return None, f"build: {exc}{also}", []
    step("build", wanted, wanted)
    checks: list[Check] = []
    running = verify(problem, sandbox=ctx.sandbox, settings=ctx.judge)
    try:
        for check in running:
            checks.append(check)
            step(check.subject, check.expected, check.got, explain(check.report, check.ok))
            if time.monotonic() > deadline:
                raise _Over
    except JudgeError as exc:  # a package the checks cannot read (an example that is not UTF-8)
        return None, f"verify: {exc}", []
    finally:
        running.close()  # cancels the gradings not started
    failed = [c for c in checks if not c.ok]
    if failed:
        return None, f"{len(failed)} of {len(checks) + 1} checks failed: " + "; ".join(
            f"{c.subject}: expected {c.expected}, got {c.got}" for c in failed), []
    data = pack(files_under(problem.data_dir))
    regrade = regrade_reference(problem, sandbox=ctx.sandbox, settings=ctx.judge)
    return data, None, weaknesses(problem, checks, regrade)
