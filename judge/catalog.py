"""Find problem packages under the problems folder and load them by id."""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from judge.errors import ProblemNotFound
from judge.problem import Problem

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
