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
from airlink.summary_text import flow_labels, format_flows, format_summary
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
        click.echo(json.dumps({**result.summary, "results": str(out)}, indent=2))
    else:
        click.echo(format_summary(result.summary, result.manifest["resolved_scenario"]))
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
        if study != "wipemu":
            raise click.BadParameter(f"{study} has no ARQ limits to choose", param_hint="--arq-limits")
        options["arq_limits"] = arq_limits
    rep = chosen.reproduce(progress=not as_json and sys.stderr.isatty(), **options)
    out = out or Path("reports") / study
    chosen.write_report(rep, out)
    if as_json:
        click.echo(json.dumps(rep.to_json(), indent=2))
    else:
        click.echo(chosen.text(rep) if chosen.text else _reproduction_text(rep))
        click.echo(f"report: {out / chosen.index}")


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
@click.option("--emu", "emu_parts", is_flag=False, flag_value="all", default=None, metavar="[PARTS]",
              help="Benchmark the real-time emulator instead (needs root): all parts, or a comma list of "
                   "linerate,delay,table2,throughput,cpu,idle,timing,own.")
@click.option("--quick", is_flag=True, help="With --emu: shorter runs (a look, not figures to quote).")
def bench(as_json: bool, full: bool, repeats: int, jobs: int | None, dumbbell: bool, emu_parts: str | None,
          quick: bool) -> None:
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

    results = benchmarks.run_benchmarks(full=full, repeats=repeats, jobs=jobs, dumbbell=dumbbell)
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
@json_option
@_emulation_errors
def emulate(scenario: Path, server_cmd: str | None, client_cmd: str | None, seed: int | None,
            overrides: tuple[str, ...], out: Path | None, force: bool, snaplen: int, timeout: float | None,
            server_delay: float, no_rt: bool, as_json: bool) -> None:
    """Run SCENARIO's emulated link in real time and write a results folder.

    With --client (and --server), one command runs on each side, e.g. iperf3 with the kernel's
    TCP. Without them, the scenario's [[flow]]s run with airlink's own transports (TCP Reno to
    AFC, DCCP CCID-2/3, UDP media) over UDP through the emulated links, until they finish or
    the scenario's stop time: the way to emulate protocols this kernel lacks.

    The folder holds manifest.json (resolved scenario, kernel, sysctls), summary.json (link
    counters, datapath timing, commands or per-flow counters), Parquet series, client.pcap and
    server.pcap (application side, headers only) and the commands' stdout/stderr.
    """
    from airlink import emulate as emulation

    if server_cmd and not client_cmd:
        raise click.UsageError("--server needs --client (with neither, the scenario's flows run with airlink's own transports)")
    command = click.get_current_context().meta.get("airlink.argv", sys.argv)
    out = out or emulation.default_out(scenario)
    try:
        result = emulation.emulate(
            scenario, client=client_cmd, server=server_cmd, out=out, seed=seed, overrides=overrides, force=force,
            snaplen=snaplen, realtime=not no_rt, timeout=timeout, server_delay=server_delay, command=command,
            progress=not as_json and sys.stderr.isatty(),
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


def _emulation_text(summary: dict[str, Any], resolved_scenario: str | None = None) -> str:
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
        raise click.BadParameter(str(e))


@cli.group(hidden=True)
def udpgen() -> None:
    """airlink's UDP packet source and sink (sendmmsg/recvmmsg) for emulator benchmarks.

    Run them as the --server/--client commands of `airlink emulate`. Rates count IP bytes
    (payload + 28); payloads carry a sequence number, so the receiver counts losses.
    """


def _udpgen_call(fn: Any, as_json: bool, **kwargs: Any) -> None:
    try:
        report = json.loads(fn(**kwargs))
    except ValueError as e:
        raise click.UsageError(str(e))
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


@cli.command()
@json_option
def doctor(as_json: bool) -> None:
    """Check what this machine allows the emulator: namespaces, TUN, privileges, congestion controls, RT."""
    checks = json.loads(_core.doctor())
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
    cli()
