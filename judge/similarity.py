"""Similarity across a class: pairs of submissions ranked by how much code they share.

A lead to check, not a verdict (:data:`NOTE`): two students may share code for honest
reasons (a worked example, a study group, the one idiomatic way to write a line), and
code may be copied in ways no token comparison sees.

How it works, after MOSS (Schleimer, Wilkerson and Aiken, "Winnowing: local algorithms
for document fingerprinting", SIGMOD 2003), as Dolos and JPlag do:

1. **Tokens.** Each document is read by the standard library's :mod:`tokenize`, Python's
   reference tokenizer: the judge grades Python only, so a grammar library buys nothing,
   and a document that does not tokenize to the end is compared by what tokenized before
   the error (never an exception). Comments, blank lines, indentation and docstrings
   (a string that is a statement by itself) are dropped. Identifiers the student names
   become one token ``V``; numbers ``N``; strings ``S``. Kept as they are: keywords,
   operators, builtins (``zip``, ``range``), attribute names after a dot (``lax.psum``,
   ``.device_put``: the API a solution calls is its substance, and renaming a variable
   does not change it) and keyword-argument names in calls (``in_specs=``). The end of a
   logical line is kept as ``;``.
2. **Fingerprints.** Hashes (blake2b, 8 bytes: stable across processes, unlike
   ``hash()``) of every ``k`` consecutive tokens that lie in one top-level statement (a
   ``def`` with its body, an assignment, an import): k-grams never span two top-level
   statements, so reordering functions or module-level assignments loses nothing. A
   statement shorter than ``k`` tokens but at least ``MIN_STATEMENT`` gets one
   fingerprint of its own, and so does every logical line inside a body of that size,
   so statements reordered inside a function still match line by line. With ``window``
   above 1, robust winnowing keeps the least hash of every ``window`` consecutive
   k-grams (the rightmost on ties, each once): any match of ``k + window - 1`` tokens is
   seen. The default keeps every k-gram (``WINDOW = 1``): exercises are short, so the
   cost is small, and a match of 6 tokens is seen; short k-grams are what survives a
   statement reordered inside a body, dead code between two lines and a helper inlined
   (``return f(x @ w + b)`` becoming ``h = f(x @ w1 + b1)`` keeps every k-gram inside
   the expression).
   Each fingerprint remembers the lines of its first and last token in the original
   text, for the side-by-side view.
3. **Templates.** Every k-gram (all of them, not only the winnowed) of a template
   (the problem's starter code, its reference solution) is removed from every document
   before comparing: code the class was given is not shared code.
4. **Boilerplate.** A fingerprint found in more than ``max(2, boilerplate * N)`` of the
   N documents is what many students write anyway (as MOSS's ``-m`` and Dolos's
   ``--max-fingerprint-percentage``); it is ignored. The others weigh
   ``log((N + 1) / df)`` (df: the documents holding it), so what two students share and
   no one else does weighs most, and an idiom a fifth of the class writes weighs little.
5. **Score.** For documents A and B with weighted fingerprint sets (what remains after 3
   and 4), ``similarity = CONTAINMENT * containment + (1 - CONTAINMENT) * jaccard``
   (0.9 and 0.1) where ``containment =
   w(A ∩ B) / max(min(w(A), w(B)), floor)`` (dead code added to a copy, or a helper
   inlined, does not hide the part that was copied; ``floor`` is ``MIN_FINGERPRINTS``
   fingerprints of a pair's weight, so tiny documents do not score 1) and ``jaccard =
   w(A ∩ B) / w(A ∪ B)`` (a short document inside a long one is less than a copy of
   it; mostly containment, because dead code added to a copy inflates the union).
   ``shared`` counts the fingerprints in common. Candidate pairs come from an inverted
   index (fingerprint to documents), so documents that share nothing cost nothing; every
   pair is scored at once (numpy, one cell per pair of documents), and a :class:`Pair`
   with its fragments is built only for the pairs asked for (``compare``'s ``limit``,
   :meth:`Comparison.pair`): a class of 1,000 takes seconds, not a minute.

Parameters, measured with ``bench/similarity.py`` on the classes of
``tests/similarity_class.py`` (three disguised copies among 25 independent students):
over seeds 0-39 the copies are the top three in 40 of 40 classes (the third copy's
score exceeds the best other pair by 0.02 at least, 0.13 in the median). The former
parameters (k 8, window 4, containment and Jaccard half and half) had it in 13 of the
first 20 (lowest margin -0.18). Tried and measured worse: k 5 (39/40, lowest margin
-0.05), k 4 (19/20, -0.12), k 8 and 12, window 2 (38/40), containment only (as good
here, but a short document inside a long one then scores as its copy), idf squared or
cubed, a boilerplate cutoff of 0.2 or 0.5, a fingerprint per whole logical line added, and identifiers numbered per line by first
occurrence (V1, V2, ...) instead of one ``V``: that last one kept the copies first in 1
of 20, because inlining a helper turns ``return expr`` into ``h = expr`` and shifts
every number in the line.

Robust to: renamed identifiers, changed literals, comments, layout and docstrings,
reordered top-level definitions and reordered statements, dead code added, a helper
inlined (its statements remain). Not robust to: a different algorithm or API for the
same result (``einsum`` for ``@``), statements rewritten token by token, code split into
many tiny statements.

Bounds: at most ``MAX_DOCUMENTS`` documents and ``MAX_TEMPLATES`` templates; a document
or template longer than ``MAX_CHARS`` characters is compared by its first ``MAX_CHARS``
(and named in ``Comparison.truncated``); no recursion on the input.

Public API (stable): :class:`Document`, :class:`Fragment`, :class:`Pair`,
:class:`Cluster`, :class:`Comparison` (``clusters(threshold)``, ``pair(a, b)``,
``total_pairs``), :func:`compare` (``limit``),
:func:`fingerprint`, :data:`NOTE`.
"""

from __future__ import annotations

import builtins
import hashlib
import io
import keyword
import math
import tokenize
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

NOTE = ("Similarity is a lead to check, not a verdict: read both submissions side by side "
        "before drawing any conclusion.")
MAX_DOCUMENTS = 2000
MAX_TEMPLATES = 20
MAX_CHARS = 256 * 1024
K = 6  # tokens per k-gram
WINDOW = 1  # k-grams per winnowing window: 1 keeps every k-gram (see step 2)
BOILERPLATE = 0.4  # of the class: a fingerprint in more documents than this is ignored
MIN_STATEMENT = 5  # tokens: a shorter statement is too common to fingerprint alone
MIN_FINGERPRINTS = 8  # containment's denominator at least: tiny documents do not score 1
CONTAINMENT = 0.9  # the score's share of containment; the rest is Jaccard (step 5)
MAX_FRAGMENTS = 50  # fragments kept per pair
_GAP = 2  # lines: matching spans this close together are one fragment
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT,
         tokenize.ENCODING, tokenize.ENDMARKER, tokenize.ERRORTOKEN}
_KEPT_NAMES = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | frozenset(
    n for n in dir(builtins) if not n.startswith("_"))


@dataclass(frozen=True)
class Document:
    """One student's code (a notebook's graded code: :func:`judge.notebook.read_notebook`),
    named by whatever the caller uses to name students."""

    name: str
    text: str


@dataclass(frozen=True)
class Fragment:
    """Lines of ``a`` and of ``b`` that match: 1-based, inclusive."""

    a_lines: tuple[int, int]
    b_lines: tuple[int, int]


@dataclass(frozen=True)
class Pair:
    a: str  # a < b
    b: str
    similarity: float  # in [0, 1]
    shared: int  # fingerprints in common, after templates and boilerplate
    fragments: tuple[Fragment, ...]  # ordered by a's lines


@dataclass(frozen=True)
class Cluster:
    members: tuple[str, ...]  # sorted
    max_similarity: float
    mean_similarity: float  # over the cluster's pairs at or above the threshold


@dataclass(frozen=True)
class Comparison:
    pairs: tuple[Pair, ...]  # the pairs with similarity > 0, most similar first (compare's limit)
    documents: int  # compared
    skipped: tuple[str, ...] = ()  # documents with no fingerprint left (too short, all template)
    truncated: tuple[str, ...] = ()  # documents compared by their first MAX_CHARS only
    total_pairs: int = -1  # every pair with similarity > 0, before the limit (-1: len(pairs))
    _index: _Index | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.total_pairs < 0:
            object.__setattr__(self, "total_pairs", len(self.pairs))

    def pair(self, a: str, b: str) -> Pair | None:
        """The pair of documents ``a`` and ``b`` (either order) as ``pairs`` would list it,
        fragments included, ranked or not; ``None`` when they share nothing."""
        index = self._index
        if index is None:
            return next((p for p in self.pairs if {p.a, p.b} == {a, b} and a != b), None)
        scores = index.scores
        where = {name: i for i, name in enumerate(scores.names)}
        if a not in where or b not in where or a == b:
            return None
        i, j = sorted((where[a], where[b]), key=scores.names.__getitem__)
        common = sorted(scores.useful[i] & scores.useful[j])  # in the order summed
        if not common:
            return None
        by_id = {v: h for h, v in index.ids.items()}
        similarity = _score(sum(scores.weight[x] for x in common), scores.sizes[i],
                            scores.sizes[j], scores.floor)
        return Pair(scores.names[i], scores.names[j], similarity, len(common),
                    _fragments(index.prints[i], index.prints[j], [by_id[x] for x in common]))

    def clusters(self, threshold: float) -> list[Cluster]:
        """Connected components of the pairs at or above ``threshold`` (union-find), the
        most similar first (ties by members); every pair counts, not only those listed."""
        parent: dict[str, str] = {}

        def find(x: str) -> str:
            parent.setdefault(x, x)
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        kept: list[tuple[str, str, float]]
        if self._index is None:
            kept = [(p.a, p.b, p.similarity) for p in self.pairs if p.similarity >= threshold]
        else:
            s = self._index.scores
            rows = s.similarity >= threshold  # ranked: as the pairs are listed
            kept = [(s.names[x], s.names[y], sim) for x, y, sim in
                    zip(s.a[rows].tolist(), s.b[rows].tolist(), s.similarity[rows].tolist(), strict=True)]
        for pa, pb, _ in kept:
            ra, rb = find(pa), find(pb)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
        groups: dict[str, list[tuple[str, str, float]]] = defaultdict(list)
        for p in kept:
            groups[find(p[0])].append(p)
        clusters = []
        for pairs in groups.values():
            members = tuple(sorted({m for p in pairs for m in p[:2]}))
            sims = [p[2] for p in pairs]
            clusters.append(Cluster(members, max(sims), round(sum(sims) / len(sims), 4)))
        clusters.sort(key=lambda c: (-c.max_similarity, c.members))
        return clusters


@dataclass(frozen=True)
class _Token:
    text: str
    first: int  # line
    last: int
    unit: int  # the top-level statement it is in
    line: int  # the logical line it is in


def tokens(text: str) -> list[_Token]:
    """``text`` as normalised tokens (the module docstring, step 1); never raises."""
    out: list[_Token] = []
    unit = line = 0
    line_start = True  # the next significant token starts a logical line
    pending: list[_Token] = []  # a logical line's tokens: a lone string is a docstring
    depth = 0  # brackets open
    prev = ""
    for tok in _raw(text[:MAX_CHARS]):
        kind, string = tok.type, tok.string
        if kind == tokenize.NEWLINE:
            if not (len(pending) == 1 and pending[0].text == "S"):
                out.extend(pending)
                if pending:
                    out.append(_Token(";", tok.start[0], tok.start[0], unit, line))
            pending = []
            line_start, prev = True, ";"
            continue
        if kind in _SKIP:
            continue
        if line_start:
            line += 1
            if tok.start[1] == 0:
                unit += 1
            line_start = False
        if kind == tokenize.NAME:
            if string in _KEPT_NAMES or prev == "." or (depth and _followed_by_equals(tok)):
                norm = string
            else:
                norm = "V"
        elif kind == tokenize.NUMBER:
            norm = "N"
        elif kind == tokenize.STRING or kind in _FSTRING:
            norm = "S"
            if pending and pending[-1].text == "S":  # adjacent strings are one
                continue
        else:
            norm = string
            if string in "([{":
                depth += 1
            elif string in ")]}" and depth:
                depth -= 1
        pending.append(_Token(norm, tok.start[0], tok.end[0], unit, line))
        prev = norm
    out.extend(pending)
    return out


_FSTRING = {getattr(tokenize, n) for n in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END")
            if hasattr(tokenize, n)}


def _followed_by_equals(tok: tokenize.TokenInfo) -> bool:
    rest = tok.line[tok.end[1]:] if tok.start[0] == tok.end[0] else ""
    rest = rest.lstrip()
    return rest.startswith("=") and not rest.startswith("==")


def _raw(text: str) -> Iterator[tokenize.TokenInfo]:
    """The tokens of ``text`` up to the first error (an unterminated string or bracket,
    a bad dedent, junk): the rest is not compared."""
    try:
        yield from tokenize.generate_tokens(io.StringIO(text).readline)
    except (tokenize.TokenError, SyntaxError, ValueError):
        return


def _hash(parts: Sequence[str]) -> int:
    digest = hashlib.blake2b("\x1f".join(parts).encode("utf-8", "replace"), digest_size=8)
    return int.from_bytes(digest.digest(), "big")


Span = tuple[int, int]


def fingerprint(text: str, *, k: int = K, window: int = WINDOW) -> dict[int, list[Span]]:
    """The fingerprints of ``text`` (the module docstring, step 2), each with the line
    spans where it occurs; ``window=1`` keeps every k-gram (what templates use)."""
    toks = tokens(text)
    grams: list[tuple[int, Span]] = []  # in order, per top-level statement
    prints: dict[int, list[Span]] = defaultdict(list)
    for group in _runs(toks, lambda t: t.unit):
        if len(group) >= k:
            unit_grams = [(_hash([t.text for t in group[i:i + k]]),
                           (group[i].first, group[i + k - 1].last))
                          for i in range(len(group) - k + 1)]
            for h, span in _winnow(unit_grams, window):
                prints[h].append(span)
            grams.extend(unit_grams)
        for stmt in _runs(group, lambda t: t.line):
            if MIN_STATEMENT <= len(stmt) < k:
                prints[_hash(["stmt", *(t.text for t in stmt)])].append(
                    (stmt[0].first, stmt[-1].last))
    return dict(prints)


def _runs(toks: Sequence[_Token], key: Callable[[_Token], int]) -> Iterator[list[_Token]]:
    run: list[_Token] = []
    for t in toks:
        if run and key(t) != key(run[-1]):
            yield run
            run = []
        run.append(t)
    if run:
        yield run


def _winnow(grams: list[tuple[int, Span]], window: int) -> list[tuple[int, Span]]:
    """Robust winnowing: the least hash of each window (the rightmost on ties), each
    position once. Fewer k-grams than a window: the least of them."""
    if window <= 1:
        return grams
    picked: list[tuple[int, Span]] = []
    last = -1
    for start in range(max(1, len(grams) - window + 1)):
        chunk = range(start, min(start + window, len(grams)))
        best = min(chunk, key=lambda i: (grams[i][0], -i))
        if best != last:
            picked.append(grams[best])
            last = best
    return picked


def compare(documents: Sequence[Document], templates: Sequence[str] = (), *,
            k: int = K, window: int = WINDOW, boilerplate: float = BOILERPLATE,
            limit: int | None = None) -> Comparison:
    """Every pair of ``documents`` that shares code, most similar first (ties by names);
    ``templates`` (starter code, the reference) are code no one is credited with.
    ``limit``: only the first ``limit`` pairs are built (with their fragments) in
    ``pairs``; ``total_pairs``, ``clusters`` and ``pair`` still see every pair.

    Every pair's score is computed at once from an inverted index (numpy arrays, one
    cell per pair), then a ``Pair`` with its fragments only for the pairs returned. A
    score whose rounding is in doubt (within 1e-9 of a half in the fourth decimal) is
    recomputed as the plain sum would: the scores are those of summing pair by pair.

    Raises ``ValueError`` for more than ``MAX_DOCUMENTS`` documents, more than
    ``MAX_TEMPLATES`` templates, two documents of one name or bad parameters."""
    if len(documents) > MAX_DOCUMENTS:
        raise ValueError(f"{len(documents)} documents; the most compared at once is "
                         f"{MAX_DOCUMENTS}")
    if len(templates) > MAX_TEMPLATES:
        raise ValueError(f"{len(templates)} templates; the most is {MAX_TEMPLATES}")
    if not (2 <= k <= 100 and 1 <= window <= 100 and 0 < boilerplate <= 1):
        raise ValueError("k must be in 2..100, window in 1..100, boilerplate in (0, 1]")
    if limit is not None and limit < 0:
        raise ValueError("limit must be at least 0")
    names = [d.name for d in documents]
    if len(set(names)) != len(names):
        raise ValueError("two documents have the same name")
    excluded: set[int] = set()
    for template in templates:
        excluded.update(fingerprint(template, k=k, window=1))
    prints = []
    for doc in documents:
        fp = fingerprint(doc.text, k=k, window=window)
        prints.append({h: spans for h, spans in fp.items() if h not in excluded})
    n = len(documents)
    ids: dict[int, int] = {}  # hash -> its number, in order of first occurrence
    held: list[list[int]] = []  # per document, the numbers of its hashes
    for fp in prints:
        held.append([ids.setdefault(h, len(ids)) for h in fp])
    df = [0] * len(ids)
    for numbers in held:
        for x in numbers:
            df[x] += 1
    most = max(2, int(boilerplate * n))
    weight = [math.log((n + 1) / d) if d <= most else 0.0 for d in df]
    sizes = [sum(weight[x] for x in numbers) for numbers in held]
    useful = [frozenset(x for x in numbers if weight[x] and df[x] >= 2) for numbers in held]
    scores = _Scores.build(names, useful, weight, sizes, _floor(n))
    shown = scores.count if limit is None else min(limit, scores.count)
    by_id = {v: h for h, v in ids.items()} if shown else {}
    pairs = tuple(scores.pair(r, prints, by_id) for r in range(shown))
    skipped = tuple(sorted(names[i] for i, size in enumerate(sizes) if size == 0))
    truncated = tuple(sorted(d.name for d in documents if len(d.text) > MAX_CHARS))
    return Comparison(pairs, n, skipped, truncated, scores.count,
                      _Index(scores, prints, ids))


def _floor(n: int) -> float:
    return MIN_FINGERPRINTS * math.log((n + 1) / 2)


def _score(both: float, size_a: float, size_b: float, floor: float) -> float:
    containment = both / max(min(size_a, size_b), floor)
    jaccard = both / (size_a + size_b - both)
    return round(min(1.0, CONTAINMENT * containment + (1 - CONTAINMENT) * jaccard), 4)


_CHUNK = 1 << 23  # pair-fingerprint incidences summed at once


@dataclass(frozen=True, eq=False)
class _Scores:
    """Every pair that shares a weighed fingerprint, ranked: ``a`` and ``b`` index
    ``names`` (``names[a] < names[b]``), one row per pair, the most similar first."""

    names: tuple[str, ...]
    useful: tuple[frozenset[int], ...]  # per document, the numbers of its weighed hashes
    weight: tuple[float, ...]  # per hash number
    sizes: tuple[float, ...]  # per document
    floor: float
    a: Any  # numpy arrays, ranked
    b: Any
    similarity: Any
    shared: Any

    @property
    def count(self) -> int:
        return len(self.a)

    @classmethod
    def build(cls, names: list[str], useful: list[frozenset[int]], weight: list[float],
              sizes: list[float], floor: float) -> _Scores:
        import numpy as np

        n = len(names)
        docs = np.fromiter((i for i, u in enumerate(useful) for _ in u), dtype=np.int64)
        hashes = np.fromiter((x for u in useful for x in u), dtype=np.int64)
        order = np.argsort(hashes, kind="stable")  # by hash, then by document
        docs, hashes = docs[order], hashes[order]
        w = np.asarray(weight, dtype=np.float64)
        starts = np.flatnonzero(np.r_[True, hashes[1:] != hashes[:-1]]) if len(hashes) \
            else np.zeros(0, dtype=np.int64)
        counts = np.diff(np.r_[starts, len(hashes)])
        both = np.zeros(n * n, dtype=np.float64)
        shared = np.zeros(n * n, dtype=np.int64)
        keys: list[Any] = []
        gained: list[Any] = []
        pending = 0

        def flush() -> None:
            nonlocal pending
            if keys:
                key = np.concatenate(keys)
                both[:] += np.bincount(key, np.concatenate(gained), minlength=n * n)
                shared[:] += np.bincount(key, minlength=n * n)
                keys.clear()
                gained.clear()
            pending = 0

        for size in np.unique(counts):
            if size < 2:
                continue
            first = starts[counts == size]
            x, y = np.triu_indices(int(size), 1)
            step = max(1, _CHUNK // len(x))
            for s in range(0, len(first), step):
                group = first[s:s + step]
                key = (docs[group[:, None] + x] * n + docs[group[:, None] + y]).ravel()
                keys.append(key)
                gained.append(np.repeat(w[hashes[group]], len(x)))
                pending += len(key)
                if pending >= _CHUNK:
                    flush()
        flush()
        cells = np.flatnonzero(shared)
        i, j = cells // n, cells % n
        size = np.asarray(sizes, dtype=np.float64)
        s_i, s_j, total = size[i], size[j], both[cells]
        score = np.minimum(1.0, CONTAINMENT * (total / np.maximum(np.minimum(s_i, s_j), floor))
                           + (1 - CONTAINMENT) * (total / (s_i + s_j - total)))
        scaled = score * 1e4
        doubtful = np.flatnonzero(np.abs(scaled - np.floor(scaled) - 0.5) < 1e-5)
        similarity = np.round(score, 4)
        for c in doubtful.tolist():  # as the sum pair by pair, in order of hash number
            hs = sorted(useful[int(i[c])] & useful[int(j[c])])
            similarity[c] = _score(sum(weight[h] for h in hs), sizes[int(i[c])],
                                   sizes[int(j[c])], floor)
        rank = np.empty(n, dtype=np.int64)
        rank[sorted(range(n), key=names.__getitem__)] = np.arange(n)
        a = np.where(rank[i] < rank[j], i, j)
        b = np.where(rank[i] < rank[j], j, i)
        count = shared[cells]
        ranked = np.lexsort((rank[b], rank[a], -count, -similarity))
        return cls(tuple(names), tuple(useful), tuple(weight), tuple(sizes), floor,
                   a[ranked], b[ranked], similarity[ranked], count[ranked])

    def pair(self, row: int, prints: list[dict[int, list[Span]]], by_id: dict[int, int]
             ) -> Pair:
        a, b = int(self.a[row]), int(self.b[row])
        hashes = [by_id[x] for x in self.useful[a] & self.useful[b]]
        return Pair(self.names[a], self.names[b], float(self.similarity[row]),
                    int(self.shared[row]), _fragments(prints[a], prints[b], hashes))


@dataclass(frozen=True, eq=False)
class _Index:
    """What :meth:`Comparison.pair` and :meth:`Comparison.clusters` need of a comparison."""

    scores: _Scores
    prints: list[dict[int, list[Span]]]
    ids: dict[int, int]


def _fragments(a: dict[int, list[Span]], b: dict[int, list[Span]], hashes: list[int]
               ) -> tuple[Fragment, ...]:
    """The matching spans as fragments: each shared fingerprint's first span in a with
    its first in b, merged where both sides touch or overlap (within ``_GAP`` lines)."""
    spans = sorted((a[h][0], b[h][0]) for h in hashes)
    merged: list[list[int]] = []
    for (a0, a1), (b0, b1) in spans:
        if merged:
            m = merged[-1]
            if a0 <= m[1] + _GAP and b0 <= m[3] + _GAP and b1 >= m[2] - _GAP:
                m[1], m[2], m[3] = max(m[1], a1), min(m[2], b0), max(m[3], b1)
                continue
        merged.append([a0, a1, b0, b1])
    return tuple(Fragment((m[0], m[1]), (m[2], m[3])) for m in merged[:MAX_FRAGMENTS])
