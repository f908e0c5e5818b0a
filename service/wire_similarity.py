"""Wire types of class similarity (``/v1/assignments/{id}/similarity``,
``/v1/batches/{id}/similarity``), declared once; the OpenAPI document is generated from
them. What the numbers mean: :mod:`judge.similarity` and docs/similarity.md."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from judge.similarity import NOTE
from service.wire import _In, _Out

DEFAULT_THRESHOLD = 0.5
DEFAULT_LIMIT = 100
MAX_LIMIT = 1000


class SimilarityQuery(_In):
    threshold: float = Field(default=DEFAULT_THRESHOLD, ge=0, le=1, description="Clusters "
                             "link the pairs at or above it.")
    limit: int = Field(default=DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description="Pairs "
                       "returned, the most similar first.")


class FragmentOut(_Out):
    a_lines: tuple[int, int] = Field(description="Lines of a's code, 1-based, inclusive.")
    b_lines: tuple[int, int] = Field(description="The matching lines of b's code.")


class PairOut(_Out):
    a: str = Field(description="A student id (a < b).")
    b: str
    a_submission: str = Field(description="The submission of a that was compared.")
    b_submission: str
    similarity: float = Field(ge=0, le=1, description="(containment + Jaccard) / 2 of the "
                              "two submissions' fingerprints, templates and boilerplate "
                              "left out.")
    shared: int = Field(ge=0, description="Fingerprints in common.")
    fragments: list[FragmentOut] = Field(description="Matching line ranges, for a "
                                         "side-by-side view.")


class ClusterOut(_Out):
    members: list[str] = Field(description="Student ids, linked by pairs at or above "
                               "the threshold.")
    max_similarity: float
    mean_similarity: float


class SimilarityOut(_Out):
    scope: Literal["assignment", "batch"]
    id: str = Field(description="The assignment's or the batch's id.")
    problem: str
    documents: int = Field(description="Submissions compared: one per student.")
    threshold: float = Field(description="Clusters link pairs at or above it.")
    pairs: list[PairOut] = Field(description="The most similar first, at most limit.")
    total_pairs: int = Field(description="Pairs with any similarity, before the limit.")
    clusters: list[ClusterOut]
    skipped: list[str] = Field(description="Student ids whose code had nothing left to "
                               "compare once the starter code and the reference were "
                               "taken out.")
    note: str = Field(default=NOTE, description="Always the same sentence: a lead to "
                      "check, not a verdict.")
