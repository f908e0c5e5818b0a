"""How well similarity ranks disguised copies, over many generated classes, and how long a
class of 1,000 takes (issue 26).

For each seed 0..N-1, ``tests/similarity_class.py`` builds a class of 30 submissions to
jax-sharding/tensor-parallel-mlp (25 independent students, 3 disguised copies, 2 who
share only the starter) and :func:`judge.similarity.compare` ranks its 435 pairs with the
starter and the reference excluded. Per seed: whether the three copies are the top
three, the margin (the third copy's score less the best pair that is not a copy; > 0
when the copies come first) and the rank of the starter-only pair. Then the time to
compare 1,000 generated documents (the classes of the first seeds, names made unique).

Prints a table and writes it into docs/performance.md between the bench:similarity
markers.

    .venv/bin/python bench/similarity.py [--seeds 20] [--documents 1000] [--runs 3]
                                         [--limit 100] [--show SEED] [--no-write]

``--limit``: the pairs of the large class built with their fragments (the API's default
``limit``); every pair is scored either way.

``--show SEED`` prints, for that seed's copy pairs and its best independent pairs, the
fingerprints each pair shares (the matching lines of both) to see what a score is made of.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from docsection import command_line, measured, replace_section

from judge.similarity import Document, compare, fingerprint

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from similarity_class import COPIED, STARTER_ONLY, make_class  # noqa: E402

PACKAGE = ROOT / "problemsets/jax-sharding/tensor-parallel-mlp"
STARTER = (PACKAGE / "starter.py").read_text()
REFERENCE = (PACKAGE / "reference.py").read_text()
COPY_PAIRS = {tuple(sorted(c)) for c in COPIED}


@dataclass(frozen=True)
class Outcome:
    seed: int
    top3: bool  # the copies are the top three
    margin: float  # the lowest copy's score less the best other pair's
    weakest_copy: float
    best_other: tuple[str, str, float]
    starter_rank: int  # 1-based; 0: not ranked (shares nothing)
    seconds: float


def evaluate(seed: int, **params: float) -> Outcome:
    code = make_class(STARTER, seed)
    documents = [Document(name, text) for name, text in code.items()]
    start = time.perf_counter()
    result = compare(documents, [STARTER, REFERENCE], **params)  # type: ignore[arg-type]
    seconds = time.perf_counter() - start
    ranked = [(p.a, p.b) for p in result.pairs]
    score = {(p.a, p.b): p.similarity for p in result.pairs}
    weakest = min(score.get(c, 0.0) for c in COPY_PAIRS)  # type: ignore[call-overload]
    other = next(((p.a, p.b, p.similarity) for p in result.pairs
                  if (p.a, p.b) not in COPY_PAIRS), ("", "", 0.0))
    rank = ranked.index(STARTER_ONLY) + 1 if STARTER_ONLY in ranked else 0
    return Outcome(seed, set(ranked[:3]) == COPY_PAIRS, round(weakest - other[2], 4), weakest,
                   other, rank, seconds)


def show(seed: int, pairs: int = 3) -> None:
    """What each copy pair and the best independent pairs share, line by line."""
    code = make_class(STARTER, seed)
    documents = [Document(name, text) for name, text in code.items()]
    result = compare(documents, [STARTER, REFERENCE])
    others = [p for p in result.pairs if (p.a, p.b) not in COPY_PAIRS][:pairs]
    copies = [p for p in result.pairs if (p.a, p.b) in COPY_PAIRS]
    for p in copies + others:
        kind = "COPY" if (p.a, p.b) in COPY_PAIRS else "other"
        print(f"\n=== {kind} {p.a} {p.b} similarity {p.similarity} shared {p.shared}")
        a_lines, b_lines = code[p.a].splitlines(), code[p.b].splitlines()
        fa, fb = fingerprint(code[p.a]), fingerprint(code[p.b])
        for h in sorted(set(fa) & set(fb), key=lambda h: fa[h][0]):
            (a0, a1), (b0, b1) = fa[h][0], fb[h][0]
            print(f"  {a0:3}-{a1:<3} {' | '.join(a_lines[a0 - 1:a1])[:70]:70}  <>  "
                  f"{' | '.join(b_lines[b0 - 1:b1])[:70]}")


def large_class(size: int) -> list[Document]:
    """``size`` documents: the classes of seeds 1000, 1001, ... (names made unique)."""
    out: list[Document] = []
    seed = 1000
    while len(out) < size:
        for name, text in make_class(STARTER, seed).items():
            out.append(Document(f"{seed}-{name}", text))
        seed += 1
    return out[:size]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--show", type=int, default=None)
    parser.add_argument("--no-write", action="store_true")
    defaults = parser.parse_args([])
    args = parser.parse_args()
    if args.show is not None:
        show(args.show)
        return
    outcomes = [evaluate(seed) for seed in range(args.seeds)]
    print(f"{'seed':>4} {'top3':>5} {'margin':>7} {'weakest copy':>12}  "
          f"{'best other pair':<22} {'starter-only rank':>17} {'ms':>6}")
    for o in outcomes:
        a, b, s = o.best_other
        print(f"{o.seed:>4} {'yes' if o.top3 else 'NO':>5} {o.margin:>7.3f} "
              f"{o.weakest_copy:>12.3f}  {a + '-' + b + f' {s:.3f}':<22} "
              f"{o.starter_rank:>17} {o.seconds * 1000:>6.1f}")
    wins = sum(o.top3 for o in outcomes)
    margins = [o.margin for o in outcomes]
    starter_top3 = sum(1 <= o.starter_rank <= 3 for o in outcomes)
    class_ms = statistics.median(o.seconds for o in outcomes) * 1000
    print(f"copies top 3: {wins}/{len(outcomes)}; margin min {min(margins):.3f} median "
          f"{statistics.median(margins):.3f}; starter-only pair in the top 3: {starter_top3}; "
          f"a class of 30: {class_ms:.1f} ms (median)")

    documents = large_class(args.documents)
    times = []
    pairs = 0
    for _ in range(args.runs):
        start = time.perf_counter()
        result = compare(documents, [STARTER, REFERENCE], limit=args.limit)
        times.append(time.perf_counter() - start)
        pairs = result.total_pairs
    big = statistics.median(times)
    print(f"{len(documents)} documents: {big:.2f} s (median of {args.runs}), "
          f"{pairs} pairs share something, the top {args.limit} built")
    if args.no_write:
        return
    command = command_line("bench/similarity.py", args, defaults, ("seeds", "documents", "runs",
                                                                      "limit"))
    replace_section("similarity", [
        "## Similarity across a class (issue 26)",
        "",
        measured(command) + f": {len(outcomes)} classes of 30 from `tests/similarity_class.py` "
        "(seeds 0 to " f"{len(outcomes) - 1}; 25 independent students, 3 disguised copies, 2 "
        "who share only the starter), the starter and reference excluded. The margin is the "
        "third copy's score less the best pair that is not a copy.",
        "",
        "| classes | copies are the top 3 | margin: min | median | starter-only pair in "
        "the top 3 | one class of 30 (median) |",
        "|---:|---:|---:|---:|---:|---:|",
        f"| {len(outcomes)} | {wins} | {min(margins):.3f} | {statistics.median(margins):.3f} "
        f"| {starter_top3} | {class_ms:.1f} ms |",
        "",
        f"{len(documents)} generated documents (the classes of seeds 1000 on) compared at "
        f"once: {big:.2f} s (median of {args.runs}; {pairs} pairs share something, every "
        f"one scored, the top {args.limit} built with their fragments).",
    ])


if __name__ == "__main__":
    main()
