"""Rejudging a problem's submissions with a report: each submission's verdict, score and
version before the rejudge are kept (``rejudge_items``), so that once they are graded
again the report says which verdicts changed. Used when an instructor publishes a new
version of an uploaded problem, and by ``POST /v1/problems/{id}/rejudge``."""

from __future__ import annotations

from typing import Any

from celery import Celery
from redis import Redis
from sqlalchemy import select
from sqlalchemy.orm import Session

from service.db import Database, chunked
from service.models import Rejudge, RejudgeItem, Status, Submission
from service.queue import BATCH
from service.settings import ServiceSettings
from service.submissions import dispatch, new_id, rejudge
from service.wire import RejudgeChange, RejudgeReport


def start(s: Session, tenant_id: int, problem: str, where: Any,
          version: str | None = None) -> tuple[str, list[str]]:
    """Record the verdicts of the submissions matching ``where`` and put them back in
    the queue (against ``version`` if given); the rejudge's id and the submissions'
    ids, to dispatch after the commit."""
    before = s.execute(select(Submission.id, Submission.verdict, Submission.score,
                              Submission.problem_version).where(where)).all()
    rejudge_id = new_id()
    s.add(Rejudge(id=rejudge_id, tenant_id=tenant_id, problem=problem, version=version,
                  total=len(before)))
    s.flush()
    for part in chunked(before):
        s.add_all([RejudgeItem(rejudge_id=rejudge_id, submission_id=sid, verdict=verdict,
                               score=score, version=old) for sid, verdict, score, old in part])
        s.flush()
    return rejudge_id, rejudge(s, where, version)


def start_and_send(db: Database, celery: Celery, settings: ServiceSettings, tenant_id: int,
                   problem: str, where: Any, version: str | None = None, *, redis: Redis
                   ) -> tuple[str, list[str]]:
    """:func:`start` in its own transaction, then the submissions published on the batch
    queue (those the broker does not take are left for the sweeper)."""
    with db.session() as s:
        rejudge_id, ids = start(s, tenant_id, problem, where, version)
    dispatch(db, celery, [(i, BATCH) for i in ids], timeout=settings.publish_timeout_seconds,
             redis=redis)
    return rejudge_id, ids


def report(db: Database, tenant_id: int, rejudge_id: str) -> RejudgeReport | None:
    """Progress and the changed verdicts; None for a rejudge the tenant does not have."""
    with db.session() as s:
        found = s.scalar(select(Rejudge).where(Rejudge.id == rejudge_id,
                                               Rejudge.tenant_id == tenant_id))
        if found is None:
            return None
        rows = s.execute(
            select(RejudgeItem.submission_id, Submission.student_id, RejudgeItem.verdict,
                   RejudgeItem.score, RejudgeItem.version, Submission.status,
                   Submission.verdict, Submission.score, Submission.problem_version)
            .join(Submission, Submission.id == RejudgeItem.submission_id)
            .where(RejudgeItem.rejudge_id == rejudge_id)
            .order_by(Submission.student_id, RejudgeItem.submission_id)).all()
    done = [r for r in rows if r[5] == Status.DONE]
    changes = [RejudgeChange(submission_id=sid, student_id=student, before=verdict,
                             after=now_verdict, score_before=score, score_after=now_score,
                             version_before=old, version_after=now_version)
               for sid, student, verdict, score, old, _, now_verdict, now_score, now_version
               in done if (verdict, score) != (now_verdict, now_score)]
    return RejudgeReport(id=found.id, problem=found.problem, version=found.version,
                         total=found.total, done=len(done), finished=len(done) == len(rows),
                         unchanged=len(done) - len(changes), changed=changes,
                         created_at=found.created_at)
