"""The ``jaxjudge`` command.

Exit status: 0 whenever a verdict (or the asked-for listing) was produced, whatever the
verdict; 1 when the judge itself could not do it (a broken package, a sandbox that failed,
``verify`` finding a package that does not prove itself); 2 on bad usage or bad input
(an unknown problem, a bad file, a bad ``JAXJUDGE_*`` setting), with a one-line reason on
stderr.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from judge.catalog import Catalog
from judge.errors import ConfigError, JudgeError, UsageError
from judge.report import VerdictReport
from judge.sandbox import BACKENDS, get_sandbox
from judge.settings import Settings, settings_error
from judge.verdict import Verdict

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

    from judge.intake import Source

VERDICT_STYLE = {Verdict.ACCEPTED: "green", Verdict.WRONG_ANSWER: "red"}


class Context:
    def __init__(self) -> None:
        self.settings = Settings()
        self.catalog = Catalog(self.settings.problems_dir)
        self.out = Console(highlight=False, soft_wrap=True)


def _fail(message: str, code: int = 2) -> NoReturn:
    click.echo(f"jaxjudge: error: {message}", err=True)
    sys.exit(code)


def _sandbox_option(default: str) -> Any:
    names = ", ".join([*sorted(BACKENDS), "auto"])
    return click.option(
        "--sandbox", "sandbox_name", default=None, metavar="NAME",
        help=f"Sandbox backend: {names} (auto: zygote when an engine answers and its "
        "seccomp profile exists, else docker when an engine answers, else process, with a "
        f"warning for untrusted code). Default: {default}.",
    )


class _PluginGroup(click.Group):
    """The top group. Commands other packages register under the ``jaxjudge.commands``
    entry point group (the service's ``db``, ``keys``, ``tenants``) join it, as Flask's CLI
    does; a plugin group of a core group's name adds its subcommands to the core's. Each
    loads only when asked for (``--help`` asks for all): loading them all took the
    service's modules, SQLAlchemy and Redis into every call (1.5 s for ``show``)."""

    _pending: dict[str, EntryPoint] | None = None  # the entry points not loaded yet

    def _plugins(self) -> dict[str, EntryPoint]:
        if self._pending is None:
            from importlib.metadata import entry_points

            self._pending = {ep.name: ep for ep in entry_points(group="jaxjudge.commands")}
        return self._pending

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._plugins()})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        mine = self.commands.get(cmd_name)
        if mine is None or isinstance(mine, click.Group):  # a core command alone: no lookup
            ep = self._plugins().pop(cmd_name, None)
            if ep is not None and mine is None:
                self.add_command(ep.load(), cmd_name)
            elif ep is not None and isinstance(mine, click.Group):
                for name, command in ep.load().commands.items():
                    mine.commands.setdefault(name, command)
        return super().get_command(ctx, cmd_name)


@click.group(cls=_PluginGroup)
@click.version_option(package_name="jaxjudge")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Grade JAX and Flax exercises against hidden tests."""
    ctx.obj = Context()


@cli.group(invoke_without_command=True)
@click.pass_context
def problems(ctx: click.Context) -> None:
    """List the problems (of the problems folder); with a command, work with packages on
    a running judge (installed with the service)."""
    if ctx.invoked_subcommand is not None:
        return
    obj: Context = ctx.obj
    problems = obj.catalog.all()
    if not problems:
        raise UsageError(f"no problem packages under {obj.catalog.root} (<set>/<slug>/"
                         "problem.yaml); set JAXJUDGE_PROBLEMS_DIR to the folder that holds "
                         "them")
    table = Table("id", "title", "entry point", box=None)
    for problem in problems:
        table.add_row(problem.id, escape(problem.spec.title), problem.spec.entry_point.name)
    obj.out.print(table)


@cli.command()
@click.argument("problem_id", metavar="ID")
@click.pass_obj
def show(obj: Context, problem_id: str) -> None:
    """Print a problem's statement, signature and sample tests."""
    from judge.testdata import load_tests
    from judge.values import render, render_input

    problem = obj.catalog.get(problem_id)
    spec = problem.spec
    obj.out.print(f"[bold]{escape(problem.id)}[/bold]: {escape(spec.title)}\n")
    obj.out.print(escape(problem.statement.rstrip()) + "\n")
    obj.out.print("[bold]Signature[/bold]")
    obj.out.print(f"  {spec.entry_point.signature}")
    for arg in spec.entry_point.args:
        obj.out.print(f"    {arg.name}: {arg.type}" + (f"  {escape(arg.doc)}" if arg.doc else ""))
    if spec.entry_point.returns:
        obj.out.print(f"  returns: {escape(spec.entry_point.returns)}")
    lim = spec.limits
    obj.out.print(f"\n[bold]Limits[/bold]: {lim.test_seconds:g} s of CPU time per test, "
                  f"{lim.total_seconds:g} s in all, {lim.memory_mb} MiB, "
                  f"{lim.output_kb} KiB of output")
    if spec.probes:
        obj.out.print("\n[bold]Probes[/bold]: what the judge checks of the program it compiles "
                      "from your function, in a sandbox that runs none of your code")
        for probe in spec.probes:
            obj.out.print(f"  {probe.name}" + (f": {escape(probe.doc)}" if probe.doc else ""))
            for line in probe.summary():
                obj.out.print(f"    {escape(line)}")
    obj.out.print("\n[bold]Sample tests[/bold]")
    for test in load_tests(problem):
        if test.visibility != "sample":
            continue
        args = ", ".join(f"{k}={render_input(v)}" for k, v in test.args.items())
        obj.out.print(f"  {test.name}: {escape(args)}\n    -> {escape(render(test.expected))}")


def _read_submission(path: Path, settings: Settings) -> Source:
    """A Python file, or a notebook (``.ipynb``: its code cells, IPython syntax removed)."""
    from judge.notebook import is_notebook, source_from_upload

    if not path.exists():
        raise UsageError(f"{path}: no such file")
    if not path.is_file():
        raise UsageError(f"{path}: not a regular file")
    size = path.stat().st_size
    limit = settings.max_notebook_bytes if is_notebook(path.name) else settings.max_code_bytes
    if size > limit:
        raise UsageError(f"{path}: the file is {size} bytes; the limit is {limit} bytes")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror}") from None
    try:
        return source_from_upload(path.name, data, settings)
    except UsageError as exc:
        raise UsageError(f"{path}: {exc}") from None


@cli.command()
@click.argument("problem_id", metavar="ID")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=True))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="json prints the verdict report alone on stdout.")
@_sandbox_option("JAXJUDGE_SANDBOX, which defaults to auto")
@click.pass_obj
def grade(obj: Context, problem_id: str, file: Path, fmt: str, sandbox_name: str | None) -> None:
    """Grade FILE (a .py file, or a .ipynb notebook) against problem ID."""
    from judge.grading import grade as grade_code

    problem = obj.catalog.get(problem_id)
    source = _read_submission(file, obj.settings)
    sandbox = get_sandbox(sandbox_name or obj.settings.sandbox, obj.settings)
    if not sandbox.isolated:
        click.echo(f"jaxjudge: warning: the {sandbox.name} sandbox does not isolate the code; "
                   "run untrusted code in an isolated sandbox", err=True)
    try:
        report = grade_code(problem, source.code, sandbox=sandbox, settings=obj.settings)
    finally:
        sandbox.close()
    if source.notes:
        report = report.model_copy(update={"source_notes": list(source.notes)})
    if fmt == "json":
        click.echo(report.model_dump_json(indent=2))
    else:
        print_report(obj.out, report)


def print_report(out: Console, report: VerdictReport) -> None:
    table = Table("#", "test", "kind", "verdict", "time", "score", "message", box=None)
    for i, test in enumerate(report.tests, 1):
        style = VERDICT_STYLE.get(test.verdict, "yellow")
        first_line = test.message.splitlines()[0] if test.message else ""
        table.add_row(str(i), test.name, test.visibility,
                      f"[{style}]{test.verdict.value}[/{style}]", f"{test.time_ms:.0f} ms",
                      f"{test.score:g}/{test.max_score:g}", escape(first_line))
    out.print(table)
    for test in report.tests:
        if test.visibility == "sample" and test.verdict is not Verdict.ACCEPTED:
            out.print(f"\n[bold]{test.name}[/bold] ({test.verdict.value})")
            for label in ("input", "expected", "received"):
                value = getattr(test, label)
                if value is not None:
                    out.print(f"  {label}: {escape(value)}")
            if "\n" in test.message:
                out.print("  " + escape(test.message).replace("\n", "\n  "))
    if report.source_notes:
        out.print("\n[bold]From the notebook[/bold]")
        for note in report.source_notes:
            out.print(f"  {escape(note)}")
    if report.message:
        out.print(f"\n{escape(report.message)}")
    for name in ("stdout", "stderr"):
        text = getattr(report, name)
        if text.strip():
            out.print(f"\n[bold]{name}[/bold]\n{escape(text.rstrip())}")
    style = VERDICT_STYLE.get(report.verdict, "yellow")
    out.print(f"\n[bold]{report.problem}[/bold]: [{style}]{report.verdict.value}[/{style}]  "
              f"score {report.score:g}/{report.max_score:g}  "
              f"{report.timings.total_ms / 1000:.2f} s")


@cli.command()
@click.argument("problem_ids", metavar="ID...", nargs=-1, required=True)
@_sandbox_option("auto (the reference is the author's own, trusted code: process is fine)")
@click.pass_obj
def build(obj: Context, problem_ids: tuple[str, ...], sandbox_name: str | None) -> None:
    """Regenerate test data by running the reference solution through the harness."""
    from judge.build import build as build_problem
    from judge.errors import BuildFailed

    problems = [obj.catalog.get(i) for i in problem_ids]
    sandbox = get_sandbox(sandbox_name or "auto", obj.settings)
    try:
        for problem in problems:
            try:
                manifest = build_problem(problem, sandbox=sandbox, settings=obj.settings)
            except BuildFailed as exc:
                # Every failure of the reference, the first line of each, and every example
                # checked on the tests the reference passed: all to fix, at once.
                _print_examples(obj, problem, exc.passed, sandbox)
                _fail("\n  ".join([str(exc).splitlines()[0]] + [
                    failure.splitlines()[0] for failure in exc.failures[1:]]), 1)
            obj.out.print(f"{problem.id}: {len(manifest.files)} tests, "
                          f"data {manifest.data_hash[:16]}, version {problem.version}")
    finally:
        sandbox.close()


def _print_examples(obj: Context, problem: Any, passed: list[Any], sandbox: Any) -> None:
    """After a failed build: each example's verdict on the tests the reference passed."""
    from judge.verify import check_examples

    checks = check_examples(problem, passed, sandbox=sandbox, settings=obj.settings)
    if not checks:
        return
    obj.out.print(f"the examples, on the {len(passed)} test(s) the reference passed:")
    for check in checks:
        obj.out.print(_check_line(check, 1))


def _check_line(check: Any, why_lines: int) -> str:
    """One check of ``verify`` (or of a failed build's examples): ok or FAIL, and for a
    failure the verdict expected and the first lines of why."""
    from judge.verify import explain

    mark = "[green]ok[/green]" if check.ok else "[red]FAIL[/red]"
    line = f"{mark}  {check.problem}  {check.subject}: {escape(check.got)}"
    if not check.ok:
        line += f" (expected {escape(check.expected)})"
        why = explain(check.report, check.ok)
        line += "".join(f"\n      {escape(part)}" for part in why.splitlines()[:why_lines])
    return line


@cli.command()
@click.argument("problem_id", metavar="SET/SLUG")
@click.option("--title", default=None, help="The problem's title (default: from the slug).")
@click.option("--build/--no-build", "run_build", default=True, show_default=True,
              help="Generate the test data right away (jaxjudge build).")
@_sandbox_option("auto (the reference is the author's own, trusted code: process is fine)")
@click.pass_obj
def new(obj: Context, problem_id: str, title: str | None, run_build: bool,
        sandbox_name: str | None) -> None:
    """Scaffold a problem package that verifies out of the box: statement, problem.yaml,
    reference and one example submission of each verdict (docs/problem-format.md)."""
    from judge.build import build as build_problem
    from judge.scaffold import scaffold

    folder = scaffold(obj.settings.problems_dir, problem_id, title)
    obj.out.print(f"wrote {escape(str(folder))}")
    if run_build:
        sandbox = get_sandbox(sandbox_name or "auto", obj.settings)
        try:
            manifest = build_problem(obj.catalog.get(problem_id), sandbox=sandbox,
                                     settings=obj.settings)
        finally:
            sandbox.close()
        obj.out.print(f"{problem_id}: {len(manifest.files)} tests built")
    obj.out.print(f"next: edit it, then jaxjudge build {problem_id} && "
                  f"jaxjudge verify {problem_id}")


@cli.command()
@click.argument("problem_ids", metavar="[ID...]", nargs=-1)
@_sandbox_option("auto (the examples are the author's own, trusted code: process is fine)")
@click.option("-j", "--jobs", type=click.IntRange(1, 64), default=os.cpu_count() or 1,
              show_default="the number of cores", help="Gradings to run at once.")
@click.option("--strict", is_flag=True,
              help="Fail on weaknesses too (no wrong answer, weak hidden tests, slow reference).")
@click.pass_obj
def verify(obj: Context, problem_ids: tuple[str, ...], sandbox_name: str | None,
           jobs: int, strict: bool) -> None:
    """Check packages: data hash, inputs, reference and every example submission; then
    report what is missing or weak."""
    from judge.verify import regrade_reference, started, weaknesses

    problems = [obj.catalog.get(i) for i in problem_ids] if problem_ids else obj.catalog.all()
    # One zygote per grading at once: the fast path, as in the service.
    settings = obj.settings.model_copy(update={"zygote_count": jobs})
    sandbox = get_sandbox(sandbox_name or "auto", settings)
    pool = _Pool(max_workers=jobs)
    failures = warnings = 0
    try:
        # The next package's gradings are handed to the pool before this one's are read,
        # so that they fill the cores this one's last gradings leave idle.
        start = partial(started, sandbox=sandbox, settings=obj.settings, pool=pool)
        following = start(problems[0]) if problems else iter(())
        for index, problem in enumerate(problems):
            current = following
            following = start(problems[index + 1]) if index + 1 < len(problems) else iter(())
            checks = []
            for check in current:
                checks.append(check)
                failures += not check.ok
                obj.out.print(_check_line(check, 5))
            if all(c.ok for c in checks):
                regrade = regrade_reference(problem, sandbox=sandbox, settings=obj.settings)
                for weakness in weaknesses(problem, checks, partial(_alone, pool, regrade)):
                    warnings += 1
                    obj.out.print(f"[yellow]weak[/yellow]  {problem.id}  {escape(weakness)}")
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        sandbox.close()
    if failures:
        obj.out.print(f"[red]{failures} check(s) failed[/red]")
        sys.exit(1)
    if warnings and strict:
        obj.out.print(f"[red]{warnings} weakness(es), and --strict[/red]")
        sys.exit(1)
    obj.out.print(f"all {len(problems)} problem(s) verified"
                  + (f", {warnings} weakness(es) to look at" if warnings else ""))


class _Pool(ThreadPoolExecutor):
    """A thread pool that knows the futures it was handed."""

    def __init__(self, max_workers: int) -> None:
        super().__init__(max_workers=max_workers)
        self.futures: list[Future[Any]] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future = super().submit(fn, *args, **kwargs)
        self.futures.append(future)
        return future


def _alone(pool: _Pool, regrade: Callable[[], VerdictReport]) -> VerdictReport:
    """A reference measured again is graded alone, as it was before the next package's
    gradings were handed over ahead: once every grading handed to ``pool`` has ended (CPU
    time is noisier beside another grading)."""
    wait(pool.futures)
    return regrade()


@cli.command()
@click.argument("path", metavar="DIR|ZIP", type=click.Path(path_type=Path))
@click.option("--template", "templates", multiple=True, type=click.Path(path_type=Path),
              help="Code the class was given (starter code, a reference): left out. Repeatable.")
@click.option("--problem", "problem_id", default=None, metavar="ID",
              help="Leave out this problem's starter code and reference.")
@click.option("--threshold", default=0.5, show_default=True, type=click.FloatRange(0, 1),
              help="Clusters link the pairs at or above it.")
@click.option("--top", default=20, show_default=True, type=click.IntRange(1, 100000),
              help="Pairs printed.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.pass_obj
def similarity(obj: Context, path: Path, templates: tuple[Path, ...], problem_id: str | None,
               threshold: float, top: int, as_json: bool) -> None:
    """Rank pairs of a class's submissions by similarity: a lead to check, not a verdict.

    DIR|ZIP holds one student per top-level entry: a .py or .ipynb file (a notebook by
    its graded code), or a folder whose .py files, in sorted order, are the student's
    code. docs/similarity.md says how it works."""
    import json

    from judge.similarity import NOTE, compare
    from judge.similarity_input import read_class, read_template

    given = [read_template(t, obj.settings) for t in templates]
    if problem_id is not None:
        problem = obj.catalog.get(problem_id)
        given += [problem.starter, problem.reference_path.read_text(encoding="utf-8")]
    documents = read_class(path, obj.settings)
    result = compare(documents, given, limit=top)
    clusters = result.clusters(threshold)
    if as_json:
        click.echo(json.dumps({
            "documents": result.documents, "threshold": threshold, "note": NOTE,
            "pairs": [{"a": p.a, "b": p.b, "similarity": p.similarity, "shared": p.shared,
                       "fragments": [{"a_lines": f.a_lines, "b_lines": f.b_lines}
                                     for f in p.fragments]} for p in result.pairs],
            "clusters": [{"members": c.members, "max_similarity": c.max_similarity,
                          "mean_similarity": c.mean_similarity} for c in clusters],
            "skipped": result.skipped}, indent=2))
        return
    click.echo(NOTE)
    click.echo(f"{result.documents} submissions, {result.total_pairs} pairs share code"
               + (f"; nothing left to compare in {', '.join(result.skipped)}"
                  if result.skipped else ""))
    for rank, p in enumerate(result.pairs, 1):
        lines = ", ".join(f"{f.a_lines[0]}-{f.a_lines[1]}~{f.b_lines[0]}-{f.b_lines[1]}"
                          for f in p.fragments[:5])
        click.echo(f"{rank:4d}  {p.similarity:6.1%}  {p.a}  {p.b}  lines {lines}")
    click.echo(f"clusters at {threshold:.0%} or more: {len(clusters)}")
    for c in clusters:
        click.echo(f"  {', '.join(c.members)}  (max {c.max_similarity:.1%}, "
                   f"mean {c.mean_similarity:.1%})")


def main(argv: list[str] | None = None) -> None:
    """Entry point: click's usage errors and the core's errors become one line, exit 2."""
    try:
        cli.main(args=argv, prog_name="jaxjudge", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        _fail("aborted", 130)
    except click.UsageError as exc:
        _fail(exc.format_message().replace("\n", " "))
    except click.ClickException as exc:
        _fail(exc.format_message().replace("\n", " "))
    except (UsageError, ConfigError) as exc:
        _fail(str(exc))
    except ValidationError as exc:  # a JAXJUDGE_* setting (the core's or the service's)
        _fail(settings_error(exc))
    except JudgeError as exc:  # a broken package or sandbox: not the caller's input
        _fail(str(exc).splitlines()[0], 1)
