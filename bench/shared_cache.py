"""Would a JAX persistent compilation cache shared between submissions speed up probe runs?

A probe's program is exported in the submission's sandbox and compiled and run in a clean
sandbox that loads no submission code (judge/harness/program.py). A cache written and read
only by clean sandboxes would be safe to share between submissions; its key is JAX's own
(jax/_src/cache_key.py: the module with ``strip-debuginfo`` applied, so source locations
do not count, plus jaxlib version, XLA flags, compile options and devices).

For each probed problem this exports, in this process (as tests/unit/harness/test_program.py
``exchange`` does), the programs of every example: the reference and the accepted and
wrong_answer submissions, for every test a probe applies to; an example that fails to
export a program (NumPy on the host) loses that program, and one with none is skipped.
Then, per example, each in a fresh Python process (JAX's in-memory caches cold), it
compiles and runs all of that example's programs as one clean run does (program.run):

  cold        no persistent cache
  shared      a cache directory already filled by all the OTHER examples of the problem
              (leave-one-out; each example fills its own directory once, in a separate
              fresh process, with jax_persistent_cache_min_compile_time_secs=0 and
              jax_persistent_cache_min_entry_size_bytes=0, and the others' are merged)
  own         the example's own directory (a resubmission of the same code: the bound)

and reports the median over examples of the compile+run wall time (program.run calls only,
not interpreter start or ``import jax``), the persistent-cache hits and misses of the
shared runs (from JAX's compiler log, split into the programs, ``jit_call``, and JAX's
own helpers, ``jit_stage``), and whether the values and the facts (HLO text, memory
stats, flops, ...) of the shared runs equal the cold runs' ones. It also exports the
reference moved down seven lines (all its source locations change) and counts its hits
in the reference's cache: whether the key ignores source locations.

Prints a table and writes it into docs/performance.md between the bench:shared-cache markers.

    .venv/bin/python bench/shared_cache.py [--runs 1] [--problem ID ...]
"""

from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                               + " --xla_force_host_platform_device_count=8").strip()

import argparse  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from docsection import measured, replace_section  # noqa: E402

from judge.settings import REPO_ROOT  # noqa: E402

PROBLEMS = ["jax-sharding/tensor-parallel-mlp", "jax-sharding/data-parallel-step",
            "jax-sharding/fsdp-step"]
KINDS = ("accepted", "wrong_answer")
METADATA = re.compile(r", metadata=\{.*?\}(?=[,\n]|$)", re.M)
SECTIONS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")


def without_locations(hlo: str) -> str:
    """HLO text without its source locations: each op's metadata={...} and the module's
    FileNames, FunctionNames, FileLocations and StackFrames sections."""
    kept, skipping = [], False
    for line in METADATA.sub("", hlo).splitlines():
        if line.strip() in SECTIONS:
            skipping = True
        elif skipping and (not line or line.startswith(("HloModule", "ENTRY", "%"))):
            skipping = False
        if not skipping:
            kept.append(line)
    return "\n".join(kept)


def examples(problem: Any) -> list[tuple[str, Path]]:
    found = [("reference", problem.reference_path)]
    for kind in KINDS:
        for path in sorted((problem.path / "submissions" / kind).glob("*.py")):
            found.append((f"{kind}/{path.stem}", path))
    return found


def export_all(problem: Any, code: str) -> tuple[list[dict[str, Any]], int]:
    """The example's probe programs, as the clean run gets them (request, args, kinds),
    and how many failed to export."""
    import jax
    import numpy as np

    from judge import probe_requests
    from judge.harness import program
    from judge.harness.inputs import convert, decode_input
    from judge.harness.probe import is_abstract
    from judge.harness.submission import FILENAME
    from judge.testdata import load_tests

    module = types.ModuleType("submission")
    module.__file__ = FILENAME
    exec(compile(code, FILENAME, "exec"), module.__dict__)
    entry = getattr(module, problem.spec.entry_point.name)
    arg_names = [a.name for a in problem.spec.entry_point.args]
    kinds: list[str] = [a.type for a in problem.spec.entry_point.args]
    jobs, failed = [], 0
    exported: dict[str, dict[str, Any]] = {}
    for test in load_tests(problem):
        for probe in problem.probes_for(test.name):
            export, export_args, request, values, value_kinds = probe_requests.requests(
                probe, arg_names, kinds, test.args)
            key = json.dumps([export.model_dump(), export_args], sort_keys=True)
            try:
                if key not in exported:
                    args = [a if is_abstract(a) else convert(decode_input(a), k, jax.numpy, np)
                            for a, k in zip(export_args, kinds, strict=True)]
                    exported[key] = program.export(entry, export.model_dump(), args, 1 << 22)
            except Exception:
                failed += 1
                continue
            run = request.model_copy(update={"program": exported[key]["program"]})
            jobs.append({"request": run.model_dump(), "args": values, "kinds": value_kinds})
    return jobs, failed


def worker(job_path: Path, cache: str | None, out_path: Path) -> None:
    """One clean run in a fresh process: compile and run every program, timed."""
    import jax

    if cache:
        jax.config.update("jax_compilation_cache_dir", cache)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    import jax.numpy as jnp
    import numpy as np

    from judge.harness import program
    from judge.harness.codec import encode
    from judge.harness.inputs import arguments

    # JAX logs each persistent-cache hit and miss with the module's name: the programs
    # are jit_call (jax.jit(exported.call)); the rest are JAX's own small helpers
    # (jit_stage: a value lifted onto the devices), the same for every submission.
    counts = {"program hit": 0, "program miss": 0, "helper hit": 0, "helper miss": 0}

    class Count(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            text = str(record.msg)
            outcome = ("hit" if text.startswith("Persistent compilation cache hit")
                       else "miss" if text.startswith("PERSISTENT COMPILATION CACHE MISS")
                       else None)
            if outcome is not None and record.args:
                args = record.args if isinstance(record.args, tuple) else ()
                what = "program" if args and args[0] == "jit_call" else "helper"
                counts[f"{what} {outcome}"] += 1

    compiler_log = logging.getLogger("jax._src.compiler")
    compiler_log.setLevel(logging.DEBUG)
    compiler_log.propagate = False
    compiler_log.addHandler(Count())
    jobs = json.loads(job_path.read_text())
    results = []
    elapsed = 0.0
    for job in jobs:
        inputs = arguments(job, jnp, np)
        start = time.perf_counter()
        try:
            value, facts = program.run(job["request"], inputs, encode, 1 << 22, 1 << 22)
            results.append({"value": value, "facts": facts})
        except program.Refused as exc:
            results.append({"refused": str(exc)})
        elapsed += time.perf_counter() - start
    out_path.write_text(json.dumps({"seconds": elapsed, "results": results, **counts}))


def clean_run(job: Path, scratch: Path, fill: list[Path] | None = None,
              keep: Path | None = None) -> dict[str, Any]:
    """One fresh process. With ``fill``, its cache is the union of those directories;
    with ``keep``, what its cache holds afterwards is moved there. The cache always sits
    at the same path: JAX puts the cache's path into the compile options it hashes
    (debug_options.xla_gpu_per_fusion_autotune_cache_dir, set even on the CPU, see
    jax_persistent_cache_enable_xla_caches), so the same program under another path
    misses."""
    out, cache = scratch / "out.json", scratch / "cache"
    command = [sys.executable, __file__, "--worker", str(job), "--out", str(out)]
    if fill is not None or keep is not None:
        shutil.rmtree(cache, ignore_errors=True)
        cache.mkdir()
        for directory in fill or []:
            shutil.copytree(directory, cache, dirs_exist_ok=True)
        command += ["--cache", str(cache)]
    subprocess.run(command, check=True, cwd=REPO_ROOT)
    if keep is not None:
        shutil.rmtree(keep, ignore_errors=True)
        cache.rename(keep)
    result: dict[str, Any] = json.loads(out.read_text())
    out.unlink()
    return result


def compare(cold: list[dict[str, Any]], warm: list[dict[str, Any]]) -> tuple[int, int, int]:
    """(programs whose value differs, whose facts differ, whose facts differ once the HLO
    text's source locations are removed)."""
    values = facts = bare = 0
    for a, b in zip(cold, warm, strict=True):
        values += a.get("value", a.get("refused")) != b.get("value", b.get("refused"))
        fa, fb = a.get("facts") or {}, b.get("facts") or {}
        facts += fa != fb
        strip = [{**f, "hlo": without_locations(f.get("hlo", ""))} for f in (fa, fb)]
        bare += strip[0] != strip[1]
    return values, facts, bare


def measure(problem_id: str, runs: int, scratch: Path) -> dict[str, Any]:
    from judge.catalog import Catalog

    problem = Catalog(REPO_ROOT / "problemsets").get(problem_id)
    names: list[str] = []
    job_files: list[Path] = []
    programs = failed = 0
    for name, path in examples(problem):
        try:
            jobs, lost = export_all(problem, path.read_text())
        except Exception as exc:
            print(f"{problem_id} {name}: not loaded ({type(exc).__name__})")
            continue
        failed += lost
        if not jobs:
            print(f"{problem_id} {name}: no program exported, skipped")
            continue
        job = scratch / f"{len(names)}.json"
        job.write_text(json.dumps(jobs))
        names.append(name)
        job_files.append(job)
        programs += len(jobs)
        print(f"{problem_id} {name}: {len(jobs)} programs, {lost} failed to export")
    own = [scratch / f"cache-{i}" for i in range(len(job_files))]
    for job, directory in zip(job_files, own, strict=True):  # each fills its own cache
        clean_run(job, scratch, keep=directory)
    # The source-location question: the reference moved down seven lines (every location
    # in its programs changes), run with the reference's own cache.
    moved = scratch / "moved.json"
    moved.write_text(json.dumps(export_all(problem, "\n" * 7 + problem.reference_path
                                           .read_text())[0]))
    shifted = clean_run(moved, scratch, fill=[own[0]])
    values, facts, bare = compare(clean_run(moved, scratch)["results"], shifted["results"])
    print(f"{problem_id} reference moved 7 lines: {shifted['program hit']} program hits, "
          f"{shifted['program miss']} misses; against its cold run: {values} values, "
          f"{facts} facts differ ({bare} beyond the HLO's source locations)")
    times: dict[str, list[list[float]]] = {k: [[] for _ in names]
                                           for k in ("cold", "shared", "own")}
    hits = {"program hit": 0, "program miss": 0, "helper hit": 0, "helper miss": 0}
    own_hits = 0
    diff = [0, 0, 0]
    for _ in range(runs):
        for i, job in enumerate(job_files):
            cold = clean_run(job, scratch)
            times["cold"][i].append(cold["seconds"])
            shared = clean_run(job, scratch, fill=[d for j, d in enumerate(own) if j != i])
            times["shared"][i].append(shared["seconds"])
            for event in hits:
                hits[event] += shared[event]
            for k, n in enumerate(compare(cold["results"], shared["results"])):
                diff[k] += n
            again = clean_run(job, scratch, fill=[own[i]])
            times["own"][i].append(again["seconds"])
            own_hits += again["program hit"]
            print(f"{problem_id} {names[i]}: cold {cold['seconds']:.2f} s, shared "
                  f"{shared['seconds']:.2f} s (programs {shared['program hit']} hits "
                  f"{shared['program miss']} misses, helpers {shared['helper hit']} hits "
                  f"{shared['helper miss']} misses), own {again['seconds']:.2f} s "
                  f"({again['program hit']} program hits)")
    median = {k: statistics.median(statistics.median(t) for t in v) for k, v in times.items()}
    return {"problem": problem_id, "examples": len(names), "programs": programs,
            "failed": failed, "median": median, "hits": hits,
            "own_hits": own_hits, "diff": diff,
            "moved": f"{shifted['program hit']}/{shifted['program miss']}"
                     + (f", HLO source locations differ in {facts}" if facts and not bare else
                        f", facts differ in {facts}" if facts else ""), "compared": programs * runs}


def identical(row: dict[str, Any]) -> str:
    values, facts, bare = row["diff"]
    if values == facts == 0:
        return "yes"
    parts = [f"values differ in {values}" if values else "values yes"]
    if facts:
        parts.append(f"facts differ in {facts}/{row['compared']}"
                     + (" (only the HLO's source locations)" if bare == 0 else ""))
    return "; ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--problem", action="append")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.worker, args.cache, args.out)
        return
    rows = []
    for problem_id in args.problem or PROBLEMS:
        with tempfile.TemporaryDirectory(prefix="shared-cache-") as scratch:
            rows.append(measure(problem_id, args.runs, Path(scratch)))
    lines = [measured(f"python bench/shared_cache.py --runs {args.runs}"), "",
             "| problem | examples | programs (not exported) | cold compile+run | with the "
             "others' cache | hits/misses: programs, JAX's helpers | with its own cache "
             "| reference moved 7 lines, in its cache | results identical |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        m = row["median"]
        cells = [f"`{row['problem']}`", str(row["examples"]),
                 f"{row['programs']} ({row['failed']})", f"{m['cold']:.2f} s",
                 f"{m['shared']:.2f} s",
                 "{}/{}, {}/{}".format(*row["hits"].values()),
                 f"{m['own']:.2f} s ({row['own_hits']} program hits)", row["moved"],
                 identical(row)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Times: the median over examples of one clean run's program.run calls "
              "(fresh process, after `import jax`)."]
    print("\n".join(lines))
    replace_section("shared-cache", lines)


if __name__ == "__main__":
    main()
