"""Find problem packages under the problems folder and load them by id."""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from judge.errors import ProblemError, ProblemNotFound
from judge.problem import Problem
from judge.testdata import check_hash

ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]*/[a-z0-9][a-z0-9-]*$")


class Catalog:
    def __init__(self, root: Path) -> None:
        self.root = root

    def ids(self) -> list[str]:
        return sorted(
            p.parent.relative_to(self.root).as_posix()
            for p in self.root.glob("*/*/problem.yaml")
            if ID_PATTERN.match(p.parent.relative_to(self.root).as_posix())
        )

    def get(self, problem_id: str) -> Problem:
        known = self.ids()
        if problem_id not in known:
            close = difflib.get_close_matches(problem_id, known, n=3, cutoff=0.5)
            slug = problem_id.rsplit("/", 1)[-1]
            close += [k for k in known if k.endswith("/" + slug) and k not in close]
            raise ProblemNotFound(problem_id, close[:3])
        return Problem.load(problem_id, self.root / problem_id)

    def all(self) -> list[Problem]:
        return [self.get(i) for i in self.ids()]

    def scan(self) -> tuple[list[Problem], dict[str, str]]:
        """Every package, without stopping at a broken one: those that load and whose
        test data matches its hash, and the ids of the others, each with why (the
        :class:`ProblemError`'s text, which names files of the package)."""
        good: list[Problem] = []
        broken: dict[str, str] = {}
        for problem_id in self.ids():
            try:
                problem = self.get(problem_id)
                check_hash(problem)
            except ProblemError as exc:
                broken[problem_id] = str(exc)
            else:
                good.append(problem)
        return good, broken
