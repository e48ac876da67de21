"""The ``airlink`` command.

Exit codes: 0 success; 1 a refused or failed action (results folder exists, a file is missing);
2 a bad scenario, override or usage (the message names file, line and column); 130 interrupted.
"""

from __future__ import annotations

import json
import signal
import sys
import tomllib
from pathlib import Path
from typing import Any, NoReturn

import click

from airlink import _core, runner
from airlink.atomic import FolderExistsError
from airlink.studies import STUDIES
from airlink.summary_text import format_summary
from airlink.version import version

EXIT_REFUSED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


class AirlinkGroup(click.Group):
    """Turns the errors a user can cause into one clear line and an exit code, no traceback."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # Kept for manifests: the command line as typed (sys.argv is not it under test runners).
        ctx.meta["airlink.argv"] = ["airlink", *args]
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except _core.ScenarioError as e:
            click.echo(str(e), err=True)
            ctx.exit(EXIT_BAD_INPUT)
        except (FolderExistsError, FileNotFoundError) as e:
            click.echo(f"airlink: {e}", err=True)
            ctx.exit(EXIT_REFUSED)
        except KeyboardInterrupt:
            click.echo("airlink: interrupted; nothing was left under the results name", err=True)
            ctx.exit(EXIT_INTERRUPTED)


scenario_argument = click.argument("scenario", type=click.Path(exists=True, dir_okay=False, path_type=Path))
set_option = click.option(
    "--set", "overrides", multiple=True, metavar="KEY=VALUE",
    help="Override a scenario value, e.g. downlink.ofdm4g.arq_max_retransmissions=3 (repeatable).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON instead of text.")


@click.group(cls=AirlinkGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(version(), "--version", "-V", prog_name="airlink", message="%(prog)s %(version)s")
def cli() -> None:
    """Simulate wireless links and measure transport protocols over them.

    Scenarios are TOML files with explicit units; see scenarios/wipemu/adaptive.toml.
    """


@cli.command()
@scenario_argument
@click.option("--seed", type=click.IntRange(0, 2**64 - 1), help="Run seed (default: the scenario's).")
@set_option
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Results folder (default: results/<scenario name>-seed<N>).")
@json_option
@click.option("--force", is_flag=True, help="Replace an existing results folder.")
def run(scenario: Path, seed: int | None, overrides: tuple[str, ...], out: Path | None, as_json: bool, force: bool) -> None:
    """Run SCENARIO in simulation and write its results folder.

    The folder holds manifest.json, summary.json and Parquet time series (flows, rtt, links,
    events); it appears only when complete.
    """
    loaded = runner.load(scenario, seed=seed, overrides=overrides)
    out = out or Path("results") / f"{loaded.name}-seed{loaded.seed}"
    command = click.get_current_context().meta.get("airlink.argv", sys.argv)
    result = runner.execute(loaded, out=out, force=force, command=command)
    if as_json:
        click.echo(result.summary_json)
    else:
        click.echo(format_summary(result.summary))
        click.echo(f"results: {out}")


@cli.command()
@scenario_argument
@set_option
@json_option
def check(scenario: Path, overrides: tuple[str, ...], as_json: bool) -> None:
    """Validate SCENARIO and print it resolved, defaults filled in (TOML)."""
    resolved = _core.check_scenario(scenario.read_text(encoding="utf-8"), str(scenario), list(overrides))
    if as_json:
        click.echo(json.dumps({"scenario": str(scenario), "valid": True, "resolved": tomllib.loads(resolved)}, indent=2))
    else:
        click.echo(f"{scenario}: valid", err=True)
        click.echo(resolved, nl=not resolved.endswith("\n"))


def _parse_limits(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    try:
        limits = tuple(int(v) for v in value.split(",") if v.strip())
    except ValueError:
        raise click.BadParameter("expected comma-separated integers, like 3,10,30") from None
    if not limits or min(limits) < 0:
        raise click.BadParameter("expected comma-separated non-negative integers, like 3,10,30")
    return limits


ALL_PARTS = list(dict.fromkeys(part for study in STUDIES.values() for part in study.parts))


@cli.command()
@click.argument("study", type=click.Choice(sorted(STUDIES)))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Report folder (default: reports/<study>); replaced whole when the new one is complete.")
@click.option("--seeds", type=click.IntRange(1), help="Seeds 1..N per point (default: the study's, 30 for wipemu).")
@click.option("--only", type=click.Choice(ALL_PARTS), help="Reproduce one table or figure.")
@json_option
@click.option("--jobs", type=click.IntRange(1), help="Parallel runs (default: the number of CPUs).")
@click.option("--arq-limits", callback=_parse_limits, metavar="LIST",
              help="wipemu: ARQ limits to run instead of the study's 3,4,5,6,8,10,15,20,30 (a quick look).")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a value in every run, e.g. \"flow.0.bytes=300 kB\" (a quick look; repeatable).")
def reproduce(study: str, out: Path | None, seeds: int | None, only: str | None, as_json: bool, jobs: int | None,
              arq_limits: tuple[int, ...] | None, overrides: tuple[str, ...]) -> None:
    """Reproduce a study's tables and figures into a report folder.

    The folder holds index.html and README.md (tables, figures, the study's claims checked
    against the data), a CSV and PNG per figure, table2.csv, runs.csv and report.json.

    --set applies to every run; the report lists it, and a reduced grid, as deviations.
    """
    chosen = STUDIES[study]
    if only is not None and only not in chosen.parts:
        raise click.BadParameter(f"{study} has no part {only!r}: expected one of {', '.join(chosen.parts)}", param_hint="--only")
    options: dict[str, Any] = {"seeds": seeds or chosen.default_seeds, "only": only, "jobs": jobs, "extra_overrides": overrides}
    if arq_limits is not None:
        options["arq_limits"] = arq_limits
    rep = chosen.reproduce(progress=not as_json and sys.stderr.isatty(), **options)
    out = out or Path("reports") / study
    chosen.write_report(rep, out)
    if as_json:
        click.echo(json.dumps(rep.to_json(), indent=2))
    else:
        click.echo(_reproduction_text(rep))
        click.echo(f"report: {out / 'index.html'}")


def _reproduction_text(rep: Any) -> str:
    lines: list[str] = []
    if rep.table2 is not None:
        lines.append("Table II  k  theoretical   measured  compensated   ratio")
        for r in rep.table2:
            lines.append(
                f"          {r['k']}  {r['theoretical_bps']:>11,.0f}  {r['measured_bps']:>9,.0f}  "
                f"{r['compensated_bps']:>11,.0f}  {100 * r['ratio']:.3f} %"
            )
    for figure in rep.figures:
        rows = rep.figure_rows(figure)
        metric = "retransmission_pct" if figure == "fig6" else "throughput_kbps"
        unit = "%" if figure == "fig6" else "kbit/s"
        lines.append(f"{figure} ({unit}, mean ± 95 % CI):")
        for curve in dict.fromkeys(r["curve"] for r in rows):
            cells = [f"{r['arq_limit']}: {r[f'{metric}_mean']:.1f}±{r[f'{metric}_ci95']:.1f}" for r in rows if r["curve"] == curve]
            label = next(r["label"] for r in rows if r["curve"] == curve)
            lines.append(f"  {label:<36} " + "  ".join(cells))
    for claim in rep.claims:
        lines.append(f"{claim['status']:<11} {claim['claim']}: {claim['detail']}")
    return "\n".join(lines)


@cli.command()
@json_option
@click.option("--full", is_flag=True, help="Also time the whole `reproduce wipemu` (minutes).")
@click.option("--repeats", type=click.IntRange(1), default=5, show_default=True, help="Runs for the median run time.")
@click.option("--jobs", type=click.IntRange(1), help="Threads for --full (default: the number of CPUs).")
@click.option("--dumbbell", is_flag=True, help="Also run the TCP dumbbell (100 s simulated; about a minute).")
def bench(as_json: bool, full: bool, repeats: int, jobs: int | None, dumbbell: bool) -> None:
    """Measure event rates, WIPEMU run times and packet rates on this machine."""
    from airlink import bench as benchmarks

    results = benchmarks.run_benchmarks(full=full, repeats=repeats, jobs=jobs, dumbbell=dumbbell)
    click.echo(benchmarks.to_json(results) if as_json else benchmarks.format_table(results))


def _exit_on_sigterm(signum: int, frame: object) -> NoReturn:
    # SystemExit unwinds like an exception, so partial folders are removed on the way out.
    raise SystemExit(128 + signum)


def main() -> None:
    """Entry point of the ``airlink`` script."""
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    cli()
