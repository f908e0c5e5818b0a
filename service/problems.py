"""A problem as the API and the pages show it: statement, signature, limits and the
sample tests (their inputs and expected values rendered); never hidden data."""

from __future__ import annotations

from judge.errors import ProblemError
from judge.problem import Problem
from judge.testdata import load_tests
from judge.values import render, render_input
from service.library import ProblemUnavailable
from service.wire import ArgumentOut, LimitsOut, ProblemDetail, ProblemSummary, SampleTestOut


def summary(problem: Problem) -> ProblemSummary:
    return ProblemSummary(id=problem.id, title=problem.spec.title, version=problem.version,
                          signature=problem.spec.entry_point.signature)


def detail(problem: Problem) -> ProblemDetail:
    """:class:`ProblemUnavailable` when its stored tests cannot be read (missing, or not
    matching their hash)."""
    spec = problem.spec
    try:
        tests = load_tests(problem)
    except ProblemError as exc:
        raise ProblemUnavailable(problem.id, problem.version, str(exc)) from None
    samples = [
        SampleTestOut(name=t.name, input=", ".join(f"{k}={render_input(v)}"
                                                   for k, v in t.args.items()),
                      expected=render(t.expected))
        for t in tests if t.visibility == "sample"
    ]
    return ProblemDetail(
        **summary(problem).model_dump(),
        statement=problem.statement,
        entry_point=spec.entry_point.name,
        arguments=[ArgumentOut(name=a.name, type=a.type, doc=a.doc)
                   for a in spec.entry_point.args],
        returns=spec.entry_point.returns,
        limits=LimitsOut(**spec.limits.model_dump()),
        checker=spec.checker.name,
        samples=samples,
        hidden_tests=sum(1 for t in tests if t.visibility == "hidden"),
        max_score=sum(t.points for t in tests),
        starter=problem.starter,
    )
