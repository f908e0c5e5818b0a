"""judge.similarity's ``limit`` and ``Comparison.pair``: every score computed at once, the
pairs built only for what is returned, and nothing ranked or scored differently from
summing pair by pair (the reference below is the former implementation's arithmetic)."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import pytest
from similarity_class import make_class

from judge.similarity import CONTAINMENT, MIN_FINGERPRINTS, Document, compare, fingerprint

PACKAGE = Path(__file__).parents[2] / "problemsets/jax-sharding/tensor-parallel-mlp"
STARTER = (PACKAGE / "starter.py").read_text()
REFERENCE = (PACKAGE / "reference.py").read_text()


def pair_by_pair(documents: list[Document], templates: list[str]
                 ) -> list[tuple[str, str, float, int]]:
    """Every pair's (a, b, similarity, shared), ranked, summed pair by pair."""
    excluded = {h for t in templates for h in fingerprint(t, window=1)}
    prints = [[h for h in fingerprint(d.text) if h not in excluded] for d in documents]
    index: dict[int, list[int]] = defaultdict(list)
    for i, fp in enumerate(prints):
        for h in fp:
            index[h].append(i)
    n = len(documents)
    most = max(2, int(0.4 * n))
    weight = {h: math.log((n + 1) / len(d)) if len(d) <= most else 0.0
              for h, d in index.items()}
    sizes = [sum(weight[h] for h in fp) for fp in prints]
    shared: dict[tuple[int, int], list[int]] = defaultdict(list)
    for h, docs in index.items():
        if weight[h]:
            for x in range(len(docs)):
                for y in range(x + 1, len(docs)):
                    shared[(docs[x], docs[y])].append(h)
    floor = MIN_FINGERPRINTS * math.log((n + 1) / 2)
    out = []
    for (i, j), hashes in shared.items():
        both = sum(weight[h] for h in hashes)
        score = (CONTAINMENT * (both / max(min(sizes[i], sizes[j]), floor))
                 + (1 - CONTAINMENT) * (both / (sizes[i] + sizes[j] - both)))
        a, b = sorted((documents[i].name, documents[j].name))
        out.append((a, b, round(min(1.0, score), 4), len(hashes)))
    return sorted(out, key=lambda p: (-p[2], -p[3], p[0], p[1]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scores_and_ranking_are_those_of_summing_pair_by_pair(seed: int) -> None:
    documents = [Document(name, text) for name, text in make_class(STARTER, seed).items()]
    templates = [STARTER, REFERENCE] if seed % 2 == 0 else []
    result = compare(documents, templates)
    assert [(p.a, p.b, p.similarity, p.shared) for p in result.pairs] \
        == pair_by_pair(documents, templates)
    assert result.total_pairs == len(result.pairs)


@pytest.mark.parametrize("seed", [0, 3])
def test_a_limit_keeps_the_top_pairs_their_fragments_the_total_and_the_clusters(
        seed: int) -> None:
    documents = [Document(name, text) for name, text in make_class(STARTER, seed).items()]
    full = compare(documents, [STARTER, REFERENCE])
    for limit in (0, 1, 5, 50, 10_000):
        top = compare(documents, [STARTER, REFERENCE], limit=limit)
        assert top.pairs == full.pairs[:limit]
        assert top.total_pairs == len(full.pairs)
        assert (top.documents, top.skipped, top.truncated) \
            == (full.documents, full.skipped, full.truncated)
        for threshold in (0.0, 0.2, 0.5, 0.9):
            assert top.clusters(threshold) == full.clusters(threshold)
    with pytest.raises(ValueError):
        compare(documents, limit=-1)


def test_one_pair_is_the_pair_listed_in_either_order() -> None:
    documents = [Document(name, text) for name, text in make_class(STARTER, 5).items()]
    full = compare(documents, [STARTER, REFERENCE])
    none = compare(documents, [STARTER, REFERENCE], limit=0)
    assert none.pairs == ()
    for p in full.pairs:
        assert none.pair(p.a, p.b) == p
        assert none.pair(p.b, p.a) == p
        assert full.pair(p.b, p.a) == p
    listed = {(p.a, p.b) for p in full.pairs}
    names = sorted(d.name for d in documents)
    apart = next((a, b) for a in names for b in names if a < b and (a, b) not in listed)
    assert none.pair(*apart) is None
    assert none.pair(names[0], names[0]) is None
    assert none.pair(names[0], "nobody") is None
