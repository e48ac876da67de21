"""The ``airlink`` command.

Exit codes: 0 success; 1 a refused or failed action (results folder exists, a file is missing);
2 a bad scenario, override or usage (the message names file, line and column); 130 interrupted.
"""

from __future__ import annotations

import _signal  # the C module: `signal` itself loads enum, which takes long enough to be interrupted
import os


def _interrupted_while_loading(signum: int, frame: object) -> None:
    # Nothing is written yet: one line and the usual code, not a traceback from inside an import.
    os.write(2, b"airlink: interrupted\n")
    os._exit(130)


# Loading the modules below takes about a second; Ctrl-C then must not print a traceback.
_LOADING = _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler
if _LOADING:
    try:
        _signal.signal(_signal.SIGINT, _interrupted_while_loading)
    except ValueError:  # imported outside the main thread: not the command, leave signals alone
        _LOADING = False

import contextlib  # noqa: E402
import json  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import tomllib  # noqa: E402
from collections.abc import Mapping  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, NoReturn  # noqa: E402

import click  # noqa: E402

from airlink import _core, runner, window_limited  # noqa: E402
from airlink.atomic import FolderExistsError, OutputError, check_output  # noqa: E402
from airlink.scenarios import read_scenario_text  # noqa: E402
from airlink.studies import STUDIES, reproduce_into, wipemu  # noqa: E402
from airlink.summary_text import flow_labels, format_flows, format_summary  # noqa: E402
from airlink.version import version  # noqa: E402

if _LOADING:
    signal.signal(signal.SIGINT, signal.default_int_handler)

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
        except (FolderExistsError, OutputError, FileNotFoundError) as e:
            click.echo(f"airlink: {e}", err=True)
            ctx.exit(EXIT_REFUSED)
        except OSError as e:  # an output path the system refuses (disk full, read-only, ...): one line
            click.echo(f"airlink: {e.filename + ': ' if e.filename else ''}{e.strerror or e}", err=True)
            ctx.exit(EXIT_REFUSED)
        except KeyboardInterrupt:
            click.echo("airlink: interrupted; nothing was left under the output name", err=True)
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
    warned = _print_warnings(scenario, overrides)
    out = out or _default_results_folder(loaded.name, loaded.seed)
    _guard_force(out, force)
    command = click.get_current_context().meta.get("airlink.argv", sys.argv)
    result = runner.execute(loaded, out=out, force=force, command=command)
    for w in window_limited.measured_warnings(result.manifest["resolved_scenario"], result.flows):
        if not any(w.split(":")[0] + ": tcp.rwnd" in before for before in warned):
            click.echo(f"warning: {w}", err=True)
    if as_json:
        click.echo(json.dumps({**result.summary, "results": str(out)}, indent=2))
    else:
        click.echo(format_summary(result.summary, result.manifest["resolved_scenario"]))
        click.echo(f"results: {out}")


RESULTS = Path("results")


def _default_results_folder(name: str, seed: int) -> Path:
    """results/<name>-seed<N>. Validation already refuses names with separators, NUL or a
    leading dot; this checks again that the folder is a direct child of results/."""
    out = RESULTS / f"{name}-seed{seed}"
    if out.parent != RESULTS or out.name != f"{name}-seed{seed}" or out.name.startswith("."):
        raise _core.ScenarioError(f"name {name!r}: expected a plain folder name")
    return out


def _guard_force(out: Path, force: bool) -> None:
    """Refuses, before the scenario runs, a results folder airlink may not write (the one rule of
    ``airlink.atomic.check_output``: --force replaces only a results folder airlink marked)."""
    check_output(out, "results", replace=force)


def _print_warnings(scenario: Path, overrides: tuple[str, ...]) -> list[str]:
    """The scenario's self-limiting settings (see airlink_sim::build::warnings), on stderr."""
    warnings = _core.scenario_warnings(read_scenario_text(scenario), str(scenario), list(overrides))
    for w in warnings:
        click.echo(f"warning: {w}", err=True)
    return warnings


def _error_json(scenario: Path, message: str) -> dict[str, Any]:
    """A ScenarioError's text (file:line:col: message, then the line and a caret) as fields."""
    import re

    first, *rest = message.split("\n", 1)
    place = re.match(r"^(?P<file>.*?):(?P<line>\d+):(?P<column>\d+): (?P<message>.*)$", first)
    fields: dict[str, Any] = {"file": str(scenario), "line": None, "column": None, "message": first}
    if place:
        fields.update(file=place["file"], line=int(place["line"]), column=int(place["column"]),
                      message=place["message"])
    elif first.startswith(f"{scenario}: "):
        fields["message"] = first[len(f"{scenario}: "):]
    elif ": " in first:
        fields["file"], fields["message"] = first.split(": ", 1)
    fields["text"] = message
    return {"scenario": str(scenario), "valid": False, "error": fields}


def _transport_comments(rows: list[tuple[int, list[tuple[str, str]]]]) -> str:
    lines = ["", "# The transport each flow runs with: the preset's values, the scenario's over them."]
    for i, kv in rows:
        lines.append(f"# flow {i}: " + ", ".join(f"{k} = {v}" for k, v in kv))
    return "\n".join(lines) + "\n"


@cli.command()
@scenario_argument
@set_option
@json_option
def check(scenario: Path, overrides: tuple[str, ...], as_json: bool) -> None:
    """Validate SCENARIO and print every effective value (TOML): defaults filled in, and each
    flow's transport parameters as comments. Warnings go to stderr."""
    try:
        text = read_scenario_text(scenario)
        resolved = _core.check_scenario(text, str(scenario), list(overrides))
        transport = _core.transport_parameters(text, str(scenario), list(overrides))
        warnings = _core.scenario_warnings(text, str(scenario), list(overrides))
    except _core.ScenarioError as e:
        if not as_json:
            raise
        click.echo(json.dumps(_error_json(scenario, str(e)), indent=2))
        sys.exit(EXIT_BAD_INPUT)
    if as_json:
        click.echo(json.dumps({"scenario": str(scenario), "valid": True, "resolved": tomllib.loads(resolved),
                               "transport": [{"flow": i, **dict(kv)} for i, kv in transport],
                               "warnings": warnings}, indent=2))
    else:
        click.echo(f"{scenario}: valid", err=True)
        for w in warnings:
            click.echo(f"warning: {w}", err=True)
        click.echo(resolved, nl=not resolved.endswith("\n"))
        click.echo(_transport_comments(transport), nl=False)


@cli.command()
@click.argument("prefix", required=False, default="")
@json_option
def keys(prefix: str, as_json: bool) -> None:
    """List every scenario key (or those starting with PREFIX): what it accepts, with units,
    its default and what it means. N stands for a flow's index."""
    rows = [k for k in _core.scenario_keys() if k["key"].startswith(prefix)]
    if not rows:
        raise click.BadParameter(f"no scenario key starts with {prefix!r}", param_hint="PREFIX")
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for k in rows:
        default = "" if k["default"] is None else f"  (default {k['default']})"
        click.echo(f"{k['key']}{default}\n    accepts: {k['accepts']}\n    {k['doc']}")


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
              help="Report folder (default: reports/<study>); its store/ keeps the runs, so a re-run reuses them.")
@click.option("--seeds", type=click.IntRange(1), help="Seeds 1..N per point (default: the study's, 30 for wipemu); for dccp, the most repetitions its rule may ask for (default 30).")
@click.option("--only", type=click.Choice(ALL_PARTS),
              help="Reproduce one table or figure; merged into an existing report of the same settings.")
@json_option
@click.option("--jobs", type=click.IntRange(1), help="Parallel runs (default: the number of CPUs).")
@click.option("--arq-limits", callback=_parse_limits, metavar="LIST",
              help="wipemu: ARQ limits to run instead of the study's 3,4,5,6,8,10,15,20,30 (a quick look).")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a value in every run, e.g. \"flow.0.bytes=300 kB\" (a quick look; repeatable).")
@click.option("--force", is_flag=True, help="Replace the report of a reproduction folder that cannot be merged with "
              "(other settings, another study); its stored runs are kept and reused.")
def reproduce(study: str, out: Path | None, seeds: int | None, only: str | None, as_json: bool, jobs: int | None,
              arq_limits: tuple[int, ...] | None, overrides: tuple[str, ...], force: bool) -> None:
    """Reproduce a study's tables and figures into a report folder.

    The folder holds index.html and README.md (tables, figures, the study's claims checked
    against the data), a CSV and PNG per figure, report.json, and store/ with every run (result
    stores of `airlink sweep`): a reproduction into the same folder again runs only what is missing.

    --only X into a report of the same settings adds X to it (the other parts are recomputed from
    their stored runs); with other settings it is refused unless --force, which replaces the report.

    --set applies to every run; the report lists it, and a reduced grid, as deviations.
    """
    chosen = STUDIES[study]
    if only is not None and only not in chosen.parts:
        raise click.BadParameter(f"{study} has no part {only!r}: expected one of {', '.join(chosen.parts)}", param_hint="--only")
    seeds = seeds or chosen.default_seeds
    if seeds < chosen.min_seeds:
        raise click.BadParameter(f"{study} needs at least {chosen.min_seeds} seeds", param_hint="--seeds")
    options: dict[str, Any] = {"seeds": seeds, "jobs": jobs, "extra_overrides": overrides}
    settings: dict[str, Any] = {"seeds": seeds, "overrides": list(overrides)}
    if arq_limits is not None:
        if study != "wipemu":
            raise click.BadParameter(f"{study} has no ARQ limits to choose", param_hint="--arq-limits")
        options["arq_limits"] = arq_limits
    if study == "wipemu":
        settings["arq_limits"] = sorted(set(arq_limits or wipemu.ARQ_LIMITS))
    out = out or Path("reports") / study
    from airlink.experiment_run import progress_lines

    # A bar on a terminal; else (a log, CI, `make demo > log`) a plain line every 10 s per part.
    lines = progress_lines.set(not as_json)
    try:
        rep, parts = reproduce_into(study, out, only=only, settings=settings, force=force,
                                    progress=not as_json and sys.stderr.isatty(), **options)
    except KeyboardInterrupt:
        from airlink.studies.reproduction import runs_kept

        kept = runs_kept(out) if out.is_dir() else 0
        click.echo(f"airlink: interrupted: {kept} finished runs kept in {out / 'store'}; run the same command "
                   "again to resume", err=True)
        sys.exit(EXIT_INTERRUPTED)
    finally:
        progress_lines.reset(lines)  # only around this reproduction (the command may run in-process)
    if only and set(parts) != {only}:
        click.echo(f"airlink: merged {only} into the report's {', '.join(p for p in parts if p != only)}", err=True)
    if as_json:
        click.echo(json.dumps(rep.to_json(only), indent=2))
    else:
        click.echo(chosen.text(rep) if chosen.text else _reproduction_text(rep))
        click.echo(f"report: {out / 'index.html'}")


def _reproduction_text(rep: Any) -> str:
    lines: list[str] = []
    if rep.table2 is not None:
        lines.append("Table II  k  theoretical   measured      study  compensated   ratio")
        for r in rep.table2:
            lines.append(
                f"          {r['k']}  {r['theoretical_bps']:>11,.0f}  {r['measured_bps']:>9,.0f}  {r['study_measured_bps']:>9,.0f}  "
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
    if rep.readings:
        lines.append("readings (claims a reading moves):")
        lines += [f"  {line}" for line in rep.reading_findings() or ["none moves a claim"]]
    return "\n".join(lines)


@cli.command()
@json_option
@click.option("--full", is_flag=True, help="Also time the whole `reproduce wipemu` (minutes).")
@click.option("--reproduce", "studies", multiple=True, type=click.Choice(sorted(STUDIES)),
              help="Also time the whole `reproduce STUDY`, all parts (repeatable; `--full` is `--reproduce wipemu`).")
@click.option("--repeats", type=click.IntRange(1), default=5, show_default=True, help="Runs for the median run time.")
@click.option("--jobs", type=click.IntRange(1), help="Threads for --full and --reproduce (default: the number of CPUs).")
@click.option("--dumbbell", is_flag=True, help="Also run the TCP dumbbell (100 s simulated; about a minute).")
@click.option("--emu", "emu_parts", is_flag=False, flag_value="all", default=None, metavar="[PARTS]",
              help="Benchmark the real-time emulator instead (needs root): all parts, or a comma list of "
                   "linerate,delay,table2,throughput,cpu,idle,timing,own.")
@click.option("--quick", is_flag=True, help="With --emu: shorter runs (a look, not figures to quote).")
@click.option("--sweep", "sweep_runs", is_flag=False, flag_value=2000, default=0, type=click.IntRange(0), metavar="[RUNS]",
              help="Also measure `airlink sweep`'s overhead per run and 1-to-2 worker scaling (default 2000 runs).")
def bench(as_json: bool, full: bool, studies: tuple[str, ...], repeats: int, jobs: int | None, dumbbell: bool,
          emu_parts: str | None, quick: bool, sweep_runs: int) -> None:
    """Measure event rates, WIPEMU run times and packet rates on this machine (--emu: the emulator's figures)."""
    if emu_parts is not None:
        from airlink import emubench

        parts = emubench.PARTS if emu_parts == "all" else tuple(p.strip() for p in emu_parts.split(",") if p.strip())
        unknown = [p for p in parts if p not in emubench.PARTS]
        if unknown:
            raise click.BadParameter(f"unknown part(s) {', '.join(unknown)}: expected {', '.join(emubench.PARTS)}",
                                     param_hint="--emu")
        progress = None if as_json else (lambda m: click.echo(f"... {m}", err=True))
        report = emubench.run(parts, quick=quick, progress=progress)
        click.echo(json.dumps(report, indent=2) if as_json else emubench.format_report(report))
        return
    from airlink import bench as benchmarks

    results = benchmarks.run_benchmarks(full=full, repeats=repeats, jobs=jobs, dumbbell=dumbbell, sweep_runs=sweep_runs,
                                        studies=studies)
    click.echo(benchmarks.to_json(results) if as_json else benchmarks.format_table(results))


def _emulation_errors(fn: Any) -> Any:
    """Emulation failures (privileges, namespaces, files) become one line and exit code 1."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except _core.EmulationError as e:
            click.echo(f"airlink: {e}", err=True)
            sys.exit(EXIT_REFUSED)

    return wrapper


@cli.command(context_settings={"ignore_unknown_options": True})
@scenario_argument
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.option("--seed", type=click.IntRange(0, 2**64 - 1), help="Run seed (default: the scenario's).")
@set_option
@click.option("--no-rt", is_flag=True, help="Do not try SCHED_FIFO/mlockall for the datapath.")
@_emulation_errors
def shell(scenario: Path, command: tuple[str, ...], seed: int | None, overrides: tuple[str, ...], no_rt: bool) -> None:
    """Run COMMAND (default: an interactive shell) in a client namespace behind SCENARIO's link.

    The server namespace at $AIRLINK_SERVER is reached only through the emulated link:
    downlink server -> wired.down -> downlink -> client, uplink client -> uplink -> wired.up ->
    server. Everything is torn down when COMMAND ends. Example:

        airlink shell scenarios/wipemu/validation.toml -- ping -c 3 $AIRLINK_SERVER
    """
    from airlink import emulate as emulation

    cmd = " ".join(_quote(c) for c in command) if command else None
    code = emulation.shell(scenario, cmd, seed=seed, overrides=overrides, realtime=not no_rt)
    sys.exit(code)


def _quote(arg: str) -> str:
    import shlex

    # Keep $AIRLINK_SERVER and friends expandable inside the namespace.
    return arg if arg.startswith("$AIRLINK_") and arg[1:].replace("_", "").isalnum() else shlex.quote(arg)


@cli.command()
@scenario_argument
@click.option("--server", "server_cmd", metavar="CMD", help="Command in the server namespace, e.g. 'iperf3 -s -1'.")
@click.option("--client", "client_cmd", metavar="CMD",
              help="Command in the client namespace, e.g. 'iperf3 -c $AIRLINK_SERVER --json'. Without it, the "
                   "scenario's flows run with airlink's own transports.")
@click.option("--seed", type=click.IntRange(0, 2**64 - 1), help="Run seed (default: the scenario's).")
@set_option
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Results folder (default: results/emulate-<scenario file name>).")
@click.option("--force", is_flag=True, help="Replace an existing results folder.")
@click.option("--snaplen", type=click.IntRange(1, 262144), default=128, show_default=True,
              help="Bytes kept of each packet in the pcaps (headers only by default).")
@click.option("--timeout", type=click.FloatRange(0, min_open=True), help="Kill the client after this many seconds.")
@click.option("--server-delay", type=click.FloatRange(0), default=0.5, show_default=True,
              help="Seconds between starting the server and the client.")
@click.option("--no-rt", is_flag=True, help="Do not try SCHED_FIFO/mlockall for the datapath.")
@click.option("--live", is_flag=True, help="Show links and flows once a second while the run goes on (as `airlink top`).")
@json_option
@_emulation_errors
def emulate(scenario: Path, server_cmd: str | None, client_cmd: str | None, seed: int | None,
            overrides: tuple[str, ...], out: Path | None, force: bool, snaplen: int, timeout: float | None,
            server_delay: float, no_rt: bool, live: bool, as_json: bool) -> None:
    """Run SCENARIO's emulated link in real time and write a results folder.

    With --client (and --server), one command runs on each side, e.g. iperf3 with the kernel's
    TCP. Without them, the scenario's [[flow]]s run with airlink's own transports (TCP Reno to
    AFC, DCCP CCID-2/3, UDP media) over UDP through the emulated links, until they finish or
    the scenario's stop time: the way to emulate protocols this kernel lacks.

    The folder holds manifest.json (resolved scenario, kernel, sysctls), summary.json (link
    counters, datapath timing, commands or per-flow counters), Parquet series, client.pcap and
    server.pcap (application side, headers only) and the commands' stdout/stderr.

    While it runs, `airlink ctl OUT ...` changes it and `airlink top OUT` shows it.
    """
    from airlink import emulate as emulation

    if server_cmd and not client_cmd:
        raise click.UsageError("--server needs --client (with neither, the scenario's flows run with airlink's own transports)")
    _print_warnings(scenario, overrides)
    if out is not None:
        _guard_force(out, force)
    command = click.get_current_context().meta.get("airlink.argv", sys.argv)
    out = out or emulation.default_out(scenario)
    view = None
    if live:
        from rich.live import Live

        from airlink.liveview import LiveView

        view = LiveView()
        display = Live(view.render(), console=_live_console(), auto_refresh=False)
    try:
        with display if view is not None else contextlib.nullcontext():
            result = emulation.emulate(
                scenario, client=client_cmd, server=server_cmd, out=out, seed=seed, overrides=overrides, force=force,
                snaplen=snaplen, realtime=not no_rt, timeout=timeout, server_delay=server_delay, command=command,
                progress=not as_json and not live and sys.stderr.isatty(),
                live=None if view is None else lambda st: (view.update(st), display.update(view.render(), refresh=True)),
            )
    except (KeyboardInterrupt, SystemExit) as e:
        # An interrupted emulation keeps what it measured until then, marked incomplete.
        code = EXIT_INTERRUPTED if isinstance(e, KeyboardInterrupt) else e.code
        kept = emulation.interrupted_folder(out)
        click.echo(f"airlink: interrupted; the run until then is kept in {out} (completed: false)" if kept
                   else "airlink: interrupted before the emulation ran; nothing was written", err=True)
        sys.exit(code)
    for warning in result.summary.get("warnings", []):
        click.echo(f"airlink: warning: {warning}", err=True)
    if as_json:
        click.echo(json.dumps({**result.summary, "results": str(result.path)}, indent=2))
    else:
        click.echo(_emulation_text(result.summary, result.manifest["resolved_scenario"]))
        click.echo(f"results: {result.path}")
    if not result.completed:
        sys.exit(EXIT_REFUSED)


@cli.command()
@click.argument("scenario", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--client-side", metavar="IFACE", help="The interface towards the client (the downlink's far end).")
@click.option("--server-side", metavar="IFACE", help="The interface towards the server.")
@click.option("--seed", type=click.IntRange(0, 2**64 - 1), help="Run seed (default: the scenario's).")
@set_option
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Results folder (default: results/emulate-<scenario file name>).")
@click.option("--force", is_flag=True, help="Replace an existing results folder.")
@click.option("--snaplen", type=click.IntRange(1, 262144), default=128, show_default=True,
              help="Bytes kept of each packet in the pcaps (headers only by default).")
@click.option("--duration", type=click.FloatRange(0, min_open=True), help="Stop after this many seconds (default: Ctrl-C).")
@click.option("--restore", "restore", metavar="IFACE", multiple=True,
              help="Only put back the offloads a killed gateway left off on IFACE (repeatable).")
@click.option("--no-rt", is_flag=True, help="Do not try SCHED_FIFO/mlockall for the datapath.")
@json_option
@_emulation_errors
def gateway(scenario: Path | None, client_side: str | None, server_side: str | None, seed: int | None,
            overrides: tuple[str, ...], out: Path | None, force: bool, snaplen: int, duration: float | None,
            restore: tuple[str, ...], no_rt: bool, as_json: bool) -> None:
    """Forward between two existing interfaces through SCENARIO's links, as a gateway box.

    Frames from --server-side take the downlink towards --client-side, and back through the
    uplink: a transparent bridge, so the hosts on either side (real machines, or namespaces at
    the far ends of veth pairs) address each other directly and know nothing of airlink. Needs
    root; turns promiscuous mode on and the interfaces' GRO/GSO/TSO/LRO off while it runs and
    puts them back when it stops (after kill -9: at the next start, or with --restore IFACE).
    Hosts that send through a veth pair must turn their own TSO/GSO off. Writes the same
    results folder as `airlink emulate`. Example:

        airlink gateway scenarios/wipemu/validation.toml --client-side veth-c --server-side veth-s --duration 60
    """
    from airlink import _core
    from airlink import emulate as emulation

    if restore:
        for iface in restore:
            put_back = _core.gateway_restore(iface)
            click.echo(f"{iface}: " + (f"turned {', '.join(put_back)} back on" if put_back else "nothing to put back"))
        return
    if scenario is None or not client_side or not server_side:
        raise click.UsageError("expected SCENARIO, --client-side IFACE and --server-side IFACE (or --restore IFACE)")
    _print_warnings(scenario, overrides)
    if out is not None:
        _guard_force(out, force)
    out = out or emulation.default_out(scenario)
    result = emulation.gateway(scenario, client_side=client_side, server_side=server_side, out=out, seed=seed,
                               overrides=overrides, force=force, snaplen=snaplen, realtime=not no_rt,
                               duration=duration, progress=not as_json and sys.stderr.isatty())
    if as_json:
        click.echo(json.dumps({**result.summary, "results": str(result.path)}, indent=2))
    else:
        click.echo(_emulation_text(result.summary, result.manifest["resolved_scenario"]))
        click.echo(f"results: {result.path}")


def _live_console() -> Any:
    """The live view's terminal: stderr, so stdout keeps the run's text or JSON."""
    from rich.console import Console

    return Console(stderr=True)


_CTL_EPILOG = """\b
Examples:
  airlink ctl results/emu set downlink rate='2 Mbit/s' loss='1 %'
  airlink ctl results/emu down ap1-down --packets kept
  airlink ctl results/emu up ap1-down
  airlink ctl results/emu handoff phone --path wan-down,ap2-down --return-path ap2-up,wan-up
  airlink ctl results/emu start 1
  airlink ctl results/emu state --json
"""


@cli.command(epilog=_CTL_EPILOG)
@click.argument("run", type=click.Path(path_type=Path))
@click.argument("op", type=click.Choice(["set", "down", "up", "handoff", "start", "stop", "state"]))
@click.argument("args", nargs=-1)
@click.option("--packets", type=click.Choice(["lost", "kept"]), help="down: what becomes of the link's packets (default lost).")
@click.option("--path", "path_", metavar="LINK,LINK", help="handoff: the flow's new links from server to client.")
@click.option("--return-path", metavar="LINK,LINK", help="handoff: the flow's new links from client to server.")
@json_option
def ctl(run: Path, op: str, args: tuple[str, ...], packets: str | None, path_: str | None, return_path: str | None,
        as_json: bool) -> None:
    """Change a running emulation, or read its state.

    RUN is the results folder (--out) of a running `airlink emulate`. Every change a
    scenario's [[change]] can make applies now and is recorded in events.parquet marked live:
    `set LINK KEY=VALUE...` (rate, delay, queue, loss, bit_error_rate, mean_snr, with units),
    `down LINK`, `up LINK`, `handoff FLOW --path ... --return-path ...`; `start FLOW` and
    `stop FLOW` for airlink's own TCP flows; `state` reads links and flows. A refused request
    changes nothing (exit code 1); the run goes on.
    """
    from airlink.control import Control, ControlError

    def need(n: int, what: str) -> None:
        if len(args) != n:
            raise click.UsageError(f"`ctl RUN {op}` takes {what}")

    try:
        with Control(run) as c:
            if op == "set":
                if not args or any("=" not in a for a in args[1:]) or len(args) < 2:
                    raise click.UsageError("`ctl RUN set` takes a link and KEY=VALUE pairs, e.g. set downlink rate='2 Mbit/s'")
                values = dict(a.split("=", 1) for a in args[1:])
                answer = c.request({"op": "set", "link": args[0], "set": {k: _ctl_value(v) for k, v in values.items()}})
            elif op in ("down", "up"):
                need(1, "one link")
                req: dict[str, Any] = {"op": op, "link": args[0]}
                if packets is not None:
                    req["packets"] = packets
                answer = c.request(req)
            elif op == "handoff":
                need(1, "one flow (its name or index) and --path and/or --return-path")
                req = {"op": op, "flow": _flow_ref(args[0])}
                for key, value in (("path", path_), ("return_path", return_path)):
                    if value is not None:
                        req[key] = [x for x in value.split(",") if x]
                answer = c.request(req)
            elif op in ("start", "stop"):
                need(1, "one flow (its name or index)")
                answer = c.request({"op": op, "flow": _flow_ref(args[0])})
            else:
                need(0, "nothing more")
                answer = c.state()
    except ControlError as e:
        raise click.ClickException(str(e)) from None
    if as_json:
        click.echo(json.dumps(answer, indent=2))
    elif op == "state":
        from rich.console import Console

        from airlink.liveview import LiveView

        view = LiveView()
        view.update(answer)
        Console().print(view.render())
    else:
        click.echo(f"{op}: applied at {answer['time_s']:.3f} s")


def _ctl_value(v: str) -> Any:
    """A value as a scenario writes it: a number stays a number, anything else a string."""
    try:
        return json.loads(v)
    except ValueError:
        return v


def _flow_ref(v: str) -> str | int:
    return int(v) if v.isdigit() else v


@cli.command()
@click.argument("run", type=click.Path(path_type=Path))
@click.option("--interval", type=click.FloatRange(0.2), default=1.0, show_default=True, help="Seconds between readings.")
def top(run: Path, interval: float) -> None:
    """Show a running emulation once a second: per link throughput, queue, drops by cause and
    model state, per flow goodput and cwnd or rate, with a sparkline of the last minute.

    RUN is the results folder (--out) of a running `airlink emulate`; ends with the run or Ctrl-C.
    """
    import time

    from rich.live import Live

    from airlink.control import Control, ControlError
    from airlink.liveview import LiveView

    view = LiveView()
    try:
        with Control(run) as c, Live(view.render(), auto_refresh=False) as display:
            while True:
                view.update(c.state())
                display.update(view.render(), refresh=True)
                time.sleep(interval)
    except ControlError as e:
        if view.state is None:
            raise click.ClickException(str(e)) from None
        click.echo(f"airlink: {e}", err=True)
    except KeyboardInterrupt:
        pass


def _emulation_text(summary: Mapping[str, Any], resolved_scenario: str | None = None) -> str:
    dp = summary["datapath"]
    lines = [f"{summary['scenario']}: {'completed' if summary['completed'] else 'NOT completed'} in {summary['duration_s']:.2f} s"]
    for c in summary["commands"]:
        lines.append(f"  {c['side']:<6} exit {c['exit_code']}: {c['command']}")
    lines.extend(format_flows(summary.get("flows", []), flow_labels(resolved_scenario)))
    for link in summary["links"]:
        lines.append(f"  {link['name']:<10} {link['model']:<7} in {link['packets_in']:>8}  out {link['packets_out']:>8}  "
                     f"queue drops {link['queue_drops']}  loss {link['loss_drops']}")
    drops = summary["drops"]
    kernel = ", ".join(f"{side} TUN tx {k['tx_dropped']} rx {k['rx_dropped']}" for side, k in drops["kernel"].items())
    lines.append(f"  drops the scenario did not ask for: memory bound {sum(drops['in_flight_limit'].values())}, "
                 f"kernel {kernel or 'n/a'}, records lost {drops['records_lost']}")
    late = dp["lateness"]
    lines.append(f"  lateness us: mean {late['mean_us']:.1f}  p50 {late['p50_us']:.0f}  p99 {late['p99_us']:.0f}  "
                 f"max {late['max_us']:.0f} over {late['packets']} packets; malformed {dp['malformed_client'] + dp['malformed_server']}")
    for w in summary["realtime"]["warnings"] + summary.get("warnings", []):
        lines.append(f"  warning: {w}")
    return "\n".join(lines)


@cli.command()
@click.option("--requests", type=click.IntRange(1), default=1000, show_default=True, help="Sleep requests per method.")
@click.option("--min", "min_ms", type=click.FloatRange(0), default=1.0, show_default=True, help="Shortest request, ms.")
@click.option("--max", "max_ms", type=click.FloatRange(0, min_open=True), default=100.0, show_default=True,
              help="Longest request, ms.")
@click.option("--method", "methods", multiple=True, type=click.Choice(["select-relative", "nanosleep-relative",
              "sleep-with-slack", "busy-wait", "absolute-sleep", "hybrid"]), help="Measure only these (repeatable).")
@click.option("--seed", type=int, default=1, show_default=True, help="Seed of the request series.")
@click.option("--no-rt", is_flag=True, help="Measure at normal priority.")
@json_option
@_emulation_errors
def timing(requests: int, min_ms: float, max_ms: float, methods: tuple[str, ...], seed: int, no_rt: bool, as_json: bool) -> None:
    """Measure sleep accuracy on this machine, as the Seawind paper's Table 1.

    With the defaults (1000 requests of 1..100 ms, six methods) this takes about five minutes;
    --requests 100 --max 10 is a quick look.
    """
    from airlink import timing as timing_mod

    if max_ms < min_ms:
        raise click.BadParameter("--max is below --min", param_hint="--max")
    progress = None if as_json or not sys.stderr.isatty() else (lambda m: click.echo(f"measuring {m} ...", err=True))
    rows = timing_mod.measure(methods or timing_mod.METHODS, requests=requests, min_ms=min_ms, max_ms=max_ms,
                              seed=seed, realtime=not no_rt, progress=progress)
    click.echo(json.dumps(rows, indent=2) if as_json else timing_mod.format_table(rows))


def _parse_rate(ctx: click.Context, param: click.Parameter, value: str | None) -> int:
    """A rate as scenarios write it ("120 Mbit/s"); none = as fast as possible (0)."""
    if value is None:
        return 0
    try:
        return _core.parse_rate(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


@cli.group(hidden=True)
def udpgen() -> None:
    """airlink's UDP packet source and sink (sendmmsg/recvmmsg) for emulator benchmarks.

    Run them as the --server/--client commands of `airlink emulate`. Rates count IP bytes
    (payload + 28); payloads carry a sequence number, so the receiver counts losses.
    """


def _udpgen_call(fn: Any, as_json: bool, **kwargs: Any) -> None:
    try:
        report = fn(**kwargs)
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    except _core.EmulationError as e:
        click.echo(f"airlink udpgen: {e}", err=True)
        sys.exit(EXIT_REFUSED)
    if as_json:
        click.echo(json.dumps(report))
    else:
        click.echo(" ".join(f"{k}={v}" for k, v in report.items()))


@udpgen.command("send")
@click.option("--to", "to", required=True, metavar="ADDR:PORT", help="Destination, e.g. $AIRLINK_CLIENT:5300.")
@click.option("--size", type=click.IntRange(12, 65507), default=72, show_default=True, help="UDP payload bytes.")
@click.option("--rate", callback=_parse_rate, metavar="RATE",
              help='Offered rate counting IP bytes, e.g. "120 Mbit/s" (default: as fast as possible).')
@click.option("--seconds", type=click.FloatRange(0, min_open=True), default=4.0, show_default=True)
@click.option("--batch", type=click.IntRange(1, 1024), default=64, show_default=True, help="Packets per sendmmsg at most.")
@click.option("--no-gso", is_flag=True, help="One message per packet (no UDP GSO).")
@json_option
def udpgen_send(to: str, size: int, rate: int, seconds: float, batch: int, no_gso: bool, as_json: bool) -> None:
    """Send a paced (or unpaced) stream of UDP packets with sequence numbers."""
    _udpgen_call(_core.udpgen_send, as_json, to=to, size=size, rate_bps=rate, seconds=seconds, batch=batch, gso=not no_gso)


@udpgen.command("recv")
@click.option("--port", type=click.IntRange(1, 65535), required=True)
@click.option("--bind", default="0.0.0.0", show_default=True, help="Local IPv4 address.")
@click.option("--seconds", type=click.FloatRange(0, min_open=True), default=10.0, show_default=True,
              help="Stop after this long at the latest.")
@click.option("--idle", type=click.FloatRange(0), default=1.0, show_default=True,
              help="Stop when nothing arrived for this long after the first packet (0 = never).")
@click.option("--batch", type=click.IntRange(1, 1024), default=64, show_default=True, help="Packets per recvmmsg at most.")
@click.option("--ready", type=click.Path(dir_okay=False), metavar="FILE",
              help="Create FILE once listening (a sender can wait for it instead of guessing how long start-up takes).")
@json_option
def udpgen_recv(port: int, bind: str, seconds: float, idle: float, batch: int, ready: str | None, as_json: bool) -> None:
    """Count the packets of `udpgen send`: packets, bytes, arrival times, gaps, malformed."""
    _udpgen_call(_core.udpgen_recv, as_json, bind=f"{bind}:{port}", seconds=seconds, idle=idle, batch=batch, ready=ready)


@cli.group()
def validate() -> None:
    """Differential validation: airlink's models against the kernel's on the same emulated link."""


@validate.command("tcp")
@click.option("--quick/--full", default=True, show_default=True,
              help="Three points with 12 s transfers (about 2.5 minutes), or the whole matrix (28 points, 20-25 minutes).")
@click.option("--preset", help="airlink's TCP preset (default: linux when this build has it, else default).")
@click.option("--seed", type=click.IntRange(0, 2**64 - 1), default=1, show_default=True)
@click.option("--seconds", type=click.FloatRange(2), help="Transfer time per run (quick 12 s, full 20 s).")
@click.option("--only", multiple=True, metavar="TEXT", help="Only points whose name contains TEXT (repeatable).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("reports/validate-tcp"),
              show_default=True, help="Report folder; it appears when the run is complete.")
@click.option("--force", is_flag=True, help="Replace an existing report folder.")
@click.option("--bbr", is_flag=True, help="airlink's bbr (simulation) against the kernel's bbr (emulation) instead: "
              "9 points, goodput, median and p95 RTT, cwnd and pacing rate (airlink.validate_bbr).")
def validate_tcp(quick: bool, preset: str | None, seed: int, seconds: float | None, only: tuple[str, ...], out: Path,
                 force: bool, bbr: bool) -> None:
    """airlink's TCP against the kernel's CUBIC and Reno (iperf3) on the same emulated links, and the
    same seed's simulation: goodput, link losses, retransmissions (spurious ones from the pcaps),
    timeouts and cwnd, checked against the agreement bounds (goodput within 10 %, retransmissions
    per link loss within 1.2x, timeouts within 2 per 100 s). Needs root for the emulated runs
    (they are reported as skipped otherwise). Writes OUT/index.html, README.md, CSVs and plots."""
    from airlink import validate as v
    from airlink.atomic import atomic_folder

    preset = preset or v.default_preset()
    if not v.preset_known(preset):
        raise click.BadParameter(f"airlink has no TCP preset {preset!r}", param_hint="--preset")
    if bbr:
        _validate_bbr(preset, seed, seconds, only, out, force)
        return
    points = v.matrix(quick=quick, seconds=seconds, only=only)
    if not points:
        raise click.BadParameter("no matrix point matches", param_hint="--only")
    check_output(out, "validation", replace=force)  # before the long runs
    with atomic_folder(out, replace=force, kind="validation") as tmp:
        report = v.run(points, tmp, preset=preset, seed=seed, progress=lambda m: click.echo(m, err=True))
    click.echo(v.format_text(report))
    click.echo(f"report: {out / 'index.html'}")


def _validate_bbr(preset: str, seed: int, seconds: float | None, only: tuple[str, ...], out: Path, force: bool) -> None:
    from airlink import validate_bbr as b
    from airlink.atomic import atomic_folder

    points = [p for p in b.matrix(seconds or 20.0) if not only or any(o in p.name for o in only)]
    if not points:
        raise click.BadParameter("no matrix point matches", param_hint="--only")
    check_output(out, "validation", replace=force)
    with atomic_folder(out, replace=force, kind="validation") as tmp:
        rows = b.run(points, tmp, preset=preset, seed=seed, progress=lambda m: click.echo(m, err=True))
    click.echo(b.format_text(rows))
    click.echo(f"report: {out / 'README.md'}")


@validate.command("aqm")
@click.option("--seconds", type=click.IntRange(5), default=30, show_default=True, help="Transfer time per point.")
@click.option("--only", multiple=True, metavar="TEXT", help="Only points whose name contains TEXT (repeatable).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("reports/validate-aqm"),
              show_default=True, help="Report folder; it appears when the run is complete.")
@click.option("--force", is_flag=True, help="Replace an existing report folder.")
def validate_aqm(seconds: int, only: tuple[str, ...], out: Path, force: bool) -> None:
    """airlink's queue disciplines (drop-tail, CoDel, FQ-CoDel, PIE, RED) against ns-3's on the
    same dumbbell, 1 and 4 NewReno flows: goodput, mean queue and drops (airlink.validate_aqm).
    ns-3 comes from the `ns3` wheel on PyPI, installed on first use into a cached virtual
    environment (about 5 minutes; AIRLINK_NS3_PYTHON names an interpreter that has it)."""
    from airlink import validate_aqm as v
    from airlink.atomic import atomic_folder

    points = [p for p in v.matrix(seconds) if not only or any(o in p.name for o in only)]
    if not points:
        raise click.BadParameter("no matrix point matches", param_hint="--only")
    check_output(out, "validation", replace=force)
    python = v.ns3_python()
    with atomic_folder(out, replace=force, kind="validation") as tmp:
        df = v.compare(points, tmp / "runs", python, progress=lambda m: click.echo(m, err=True))
        v.write_report(df, tmp)
    click.echo(v.format_table(df))
    click.echo(f"report: {out / 'README.md'}")


@cli.command()
@click.argument("experiment", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Result store (default: <experiment name>.sweep); a re-run resumes it.")
@click.option("--jobs", type=click.IntRange(1), help="Parallel runs (default: the number of CPUs).")
@click.option("--dask", metavar="ADDRESS",
              help="Run on a Dask cluster: a scheduler ADDRESS (tcp://host:8786), or local:N for N worker processes here.")
@click.option("--allow-mixed", is_flag=True,
              help="Reuse stored runs that another build of the core made (the store's manifest notes it).")
@click.option("--rerun-stale", is_flag=True, help="Run again the stored runs that another build of the core made.")
def sweep(experiment: Path, out: Path | None, jobs: int | None, dask: str | None, allow_mixed: bool,
          rerun_stale: bool) -> None:
    """Run an EXPERIMENT file (a scenario, parameters to vary, metrics, repetitions) into a store.

    The store holds runs.parquet (a row per run and flow), metrics.parquet, summary.parquet,
    paired.parquet and differences.parquet (with a reference), each run's time series under
    series/, and manifest.json. Done runs are skipped, so an interrupted sweep resumes where it stopped.

    A stored run is reused only by the build of the core that made it: runs of another build are
    refused unless --rerun-stale or --allow-mixed. Progress goes to stderr (a bar on a terminal,
    else a line every 10 s), and the sweep ends saying how many runs were reused and how many new.
    """
    import importlib.util

    from airlink import experiment as ex
    from airlink import experiment_run, store

    if allow_mixed and rerun_stale:
        raise click.BadParameter("choose one: --allow-mixed reuses the stale runs, --rerun-stale runs them again",
                                 param_hint="--allow-mixed")
    if dask is not None:
        if jobs is not None:
            raise click.BadParameter("--jobs is for local runs; a Dask cluster has its own workers", param_hint="--jobs")
        try:
            experiment_run.parse_dask(dask)
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--dask") from None
        if importlib.util.find_spec("distributed") is None:  # found, not loaded: loaded only if a run needs it
            raise click.BadParameter("needs dask.distributed: from the airlink source tree, pip install '.[cluster]' (airlink is not on PyPI)", param_hint="--dask")
    exp = ex.load_experiment(experiment)
    out = out or Path(f"{experiment.stem}.sweep")
    check_output(out, "store")  # before describing the plan: a folder airlink did not make is refused
    click.echo(ex.describe(exp), err=True)
    try:
        root = experiment_run.run_experiment(exp, out, jobs=jobs, dask=dask, progress=True, allow_mixed=allow_mixed,
                                             rerun_stale=rerun_stale)
    except KeyboardInterrupt:
        _interrupted_sweep(exp, out)
    click.echo(store.format_summary(store.load(root, "summary"), list(exp.parameters), list(exp.metrics)))
    click.echo(f"results: {root}")


def _interrupted_sweep(exp: Any, out: Path) -> NoReturn:
    """Ctrl-C on a sweep: finished runs are in the store; say how many, truthfully."""
    from airlink.store import Store

    done = Store(out)
    rule = exp.repetitions
    if rule.rule == "fixed":
        keys = [exp.run_key(c, r) for c in exp.configs for r in range(rule.count)]
        kept = sum(1 for k in keys if (record := done.get(k)) is not None and record["status"] == "ok")
        what = f"{kept} of {len(keys)} runs"
    else:
        kept = sum(1 for _ in done.runs.glob("*.json")) if done.runs.is_dir() else 0
        what = f"{kept} runs (the repetition rule decides how many more)"
    click.echo(f"airlink: interrupted: {what} kept in {out}; run the same command again to resume", err=True)
    sys.exit(EXIT_INTERRUPTED)


@cli.command()
@click.argument("results", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Report folder (default: RESULTS/report, replaced each time).")
@click.option("--run", "runs", multiple=True, metavar="KEY", help="A run to draw the time series of (repeatable).")
@click.option("--force", is_flag=True, help="Replace an existing --out folder.")
def report(results: Path, out: Path | None, runs: tuple[str, ...], force: bool) -> None:
    """Write the HTML report of a sweep's store RESULTS: index.html, PNG figures, CSV tables.

    Means with 95 % intervals, each metric against a swept parameter, min/max/mean bars, CDFs
    across runs and pooled over flows, paired differences against the reference, and time series
    of chosen runs with pointwise means across repetitions.
    """
    from airlink import report as rp

    click.echo(f"report: {rp.write_report(results, out, runs=runs, replace=force)}")


@cli.command()
@click.argument("store_a", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("store_b", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--metric", help="One metric to compare, its path or short name (default: those both experiments named).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="PNG figure (default: compare-A-vs-B.png here).")
@click.option("--force", is_flag=True, help="Replace an existing figure (only a PNG airlink drew).")
def compare(store_a: Path, store_b: Path, metric: str | None, out: Path | None, force: bool) -> None:
    """Compare two sweep stores: per configuration (matched by the parameters both swept), each
    metric's mean ± 95 % in A and B, the difference B − A and whether the intervals overlap;
    draws both side by side into a PNG."""
    from airlink import comparison as cmp
    from airlink.atomic import claim_file, write_file
    from airlink.tables import safe_name

    if out is not None and out.suffix.lower() != ".png":
        raise click.BadParameter(f"{out}: the figure is a PNG file; give a name ending in .png", param_hint="--out")
    out = out or Path(f"compare-{safe_name(store_a.resolve().name)}-vs-{safe_name(store_b.resolve().name)}.png")
    claim_file(out, force=force)  # before reading the stores
    try:
        frame = cmp.compare(store_a, store_b, metric)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--metric" if metric else "STORE_B") from None
    click.echo(cmp.format_comparison(frame, str(store_a), str(store_b)))
    if not frame.empty:
        write_file(out, lambda path: cmp.compare_png(path, frame, store_a.name, store_b.name), force=force)
        click.echo(f"figure: {out}")


@cli.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="PNG file (default: RUN/timeseries.png for one run, timeseries.png for several).")
@click.option("--force", is_flag=True, help="Replace an existing plot (only a PNG airlink drew).")
def plot(runs: tuple[Path, ...], out: Path | None, force: bool) -> None:
    """Draw the time series of one or several RUNS (results folders of `run`, `emulate` or a
    sweep's STORE/series/KEY): throughput, cwnd or rate, RTT, queue, losses and link state."""
    from airlink import plots
    from airlink.atomic import claim_file, write_file
    from airlink.results import ResultsError, read_results

    if out is not None and out.suffix.lower() != ".png":
        raise click.BadParameter(f"{out}: a plot is a PNG file; give a name ending in .png", param_hint="--out")
    out = out or (runs[0] / "timeseries.png" if len(runs) == 1 else Path("timeseries.png"))
    claim_file(out, force=force)  # before reading the runs
    try:
        results = [(p.name, read_results(p)) for p in runs]
    except ResultsError as e:
        raise click.ClickException(str(e)) from None
    title = " vs ".join(f"{r.summary.get('scenario', p)} seed {r.manifest.get('seed')} ({r.manifest.get('mode')})"
                        for p, r in results)
    write_file(out, lambda path: plots.runs_png(path, results, title), force=force)
    click.echo(f"plot: {out}")


@cli.command()
@json_option
def doctor(as_json: bool) -> None:
    """Check what this machine allows the emulator: namespaces, TUN, privileges, congestion controls, RT."""
    checks = _core.doctor()
    if as_json:
        click.echo(json.dumps(checks, indent=2))
    else:
        for c in checks:
            mark = "ok  " if c["ok"] else ("FAIL" if c["required"] else "warn")
            click.echo(f"{mark} {c['name']:<34} {c['detail']}")
        missing = [c["name"] for c in checks if c["required"] and not c["ok"]]
        click.echo("emulation: " + ("possible" if not missing else "not possible, missing: " + ", ".join(missing)))
    if any(c["required"] and not c["ok"] for c in checks):
        sys.exit(EXIT_REFUSED)


def _exit_on_sigterm(signum: int, frame: object) -> NoReturn:
    # SystemExit unwinds like an exception, so partial folders are removed on the way out.
    raise SystemExit(128 + signum)


def main() -> None:
    """Entry point of the ``airlink`` script."""
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    # Not click's standalone mode, which turns Ctrl-C outside a command into "Aborted!" and exit 1.
    try:
        code = cli.main(standalone_mode=False)
    except (KeyboardInterrupt, click.exceptions.Abort):
        click.echo("airlink: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    sys.exit(code if isinstance(code, int) else 0)
