"""Similarity across a class (:mod:`judge.similarity`) for an assignment or a batch.

An assignment compares one submission per student: the one its grade hangs on
(:func:`service.grades.grades`, the assignment's policy and overrides), else the
student's latest finished one (a student with nothing graded yet). A batch compares
every submission of the batch, named by its student id (its submission id where it has
none). Notebooks were stored as their graded code, so that is what is compared. The
templates are the problem's starter code and its reference: code the class was given,
or the answer itself, is no one's shared code.

Instructors only (the API says so); the answer carries :data:`judge.similarity.NOTE`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from judge.errors import JudgeError, ProblemError
from judge.problem import Problem
from judge.similarity import MAX_DOCUMENTS, Document, Pair, compare
from service.grades import grades
from service.library import Library
from service.models import Assignment, Batch, Status, Submission
from service.wire_similarity import ClusterOut, FragmentOut, PairOut, SimilarityOut


@dataclass(frozen=True)
class Compared:
    """One student's code: who, which submission."""

    student: str
    submission: str
    code: str


def assignment_code(s: Session, assignment: Assignment) -> list[Compared]:
    """The submission that counts for each student of ``assignment`` (see the module)."""
    chosen = {student: grade.submission_id
              for student, grade in grades(s, assignment, with_comments=False).items()}
    latest: dict[str, str] = {}
    for row in s.execute(
            select(Submission.student_id, Submission.id).where(
                Submission.assignment_id == assignment.id,
                Submission.student_id.is_not(None), Submission.status == Status.DONE,
                Submission.sample_run.is_(False))
            .order_by(Submission.received_at, Submission.id)):
        latest[row.student_id] = row.id
    wanted = {student: chosen.get(student, sub) for student, sub in latest.items()}
    wanted.update(chosen)
    return _read(s, sorted(wanted.items())[:MAX_DOCUMENTS])


def batch_code(s: Session, batch: Batch) -> list[Compared]:
    """Every submission of ``batch``, by student id (the submission id where none)."""
    rows = s.execute(select(Submission.id, Submission.student_id)
                     .where(Submission.batch_id == batch.id)
                     .order_by(Submission.id).limit(MAX_DOCUMENTS))
    named: dict[str, str] = {}
    for row in rows:
        name = row.student_id or row.id
        if name in named:  # one student twice in a batch: tell them apart
            name = f"{name}#{row.id}"
        named[name] = row.id
    return _read(s, sorted(named.items()))


def _read(s: Session, wanted: Sequence[tuple[str, str]]) -> list[Compared]:
    ids = [sub for _, sub in wanted]
    code: dict[str, str] = {}
    for start in range(0, len(ids), 500):
        for sid, text in s.execute(select(Submission.id, Submission.code)
                                   .where(Submission.id.in_(ids[start:start + 500]))):
            code[sid] = text
    return [Compared(student, sub, code[sub]) for student, sub in wanted if sub in code]


def templates(problem: Problem) -> list[str]:
    """The problem's starter code and its reference (what is readable of them)."""
    found = []
    with contextlib.suppress(ProblemError):
        found.append(problem.starter)
    with contextlib.suppress(OSError, UnicodeDecodeError):
        found.append(problem.reference_path.read_text(encoding="utf-8"))
    return found


def similarity(library: Library, tenant_id: int, scope: Literal["assignment", "batch"], scope_id: str, problem_id: str,
               members: list[Compared], *, threshold: float, limit: int) -> SimilarityOut:
    """``members`` compared, templates from the problem as the tenant sees it (a problem
    that no longer loads: compared without templates)."""
    given = _given(library, tenant_id, problem_id)
    result = compare([Document(m.student, m.code) for m in members], given, limit=limit)
    subs = {m.student: m.submission for m in members}
    pairs = [_pair_out(p, subs) for p in result.pairs]
    clusters = [ClusterOut(members=list(c.members), max_similarity=c.max_similarity,
                           mean_similarity=c.mean_similarity)
                for c in result.clusters(threshold)]
    return SimilarityOut(scope=scope, id=scope_id, problem=problem_id,
                         documents=result.documents, threshold=threshold, pairs=pairs,
                         total_pairs=result.total_pairs, clusters=clusters,
                         skipped=list(result.skipped))


def compare_pair(library: Library, tenant_id: int, problem_id: str, members: list[Compared],
                    a: str, b: str) -> PairOut | None:
    """The pair of students ``a`` and ``b`` of ``members`` (``a`` < ``b`` in the answer),
    compared within the whole class as :func:`similarity` compares them, fragments
    included; ``None`` when they share nothing."""
    result = compare([Document(m.student, m.code) for m in members],
                     _given(library, tenant_id, problem_id), limit=0)
    found = result.pair(a, b)
    if found is None:
        return None
    return _pair_out(found, {m.student: m.submission for m in members})


def _given(library: Library, tenant_id: int, problem_id: str) -> list[str]:
    try:
        return templates(library.get(tenant_id, problem_id))
    except JudgeError:  # gone (ProblemNotFound) or broken (ProblemError)
        return []


def _pair_out(p: Pair, subs: dict[str, str]) -> PairOut:
    return PairOut(a=p.a, b=p.b, a_submission=subs[p.a], b_submission=subs[p.b],
                   similarity=p.similarity, shared=p.shared,
                   fragments=[FragmentOut(a_lines=f.a_lines, b_lines=f.b_lines)
                              for f in p.fragments])
