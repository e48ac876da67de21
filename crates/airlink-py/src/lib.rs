//! `airlink._core`: the Rust core seen from Python. This file is the one place where Rust
//! errors become Python exceptions: a bad scenario raises `ScenarioError` (a `ValueError`)
//! whose message names the file, line and column.

use airlink_engine::Instant;
use airlink_net::metrics::Column;
use airlink_scenario::Scenario;
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Mutex;

/// Builds without the emulator (`--no-default-features`, or not Linux) get functions of the
/// same names that raise `EmulationError` saying so (see `no_emulation.rs`).
#[cfg(not(all(feature = "emulation", target_os = "linux")))]
mod no_emulation;
#[cfg(not(all(feature = "emulation", target_os = "linux")))]
use no_emulation::*;
#[cfg(all(feature = "emulation", target_os = "linux"))]
mod emulation_summary;
mod typed;
use typed::to_py;
/// Whether this build can emulate (`airlink._core.EMULATION`).
const EMULATION: bool = cfg!(all(feature = "emulation", target_os = "linux"));

create_exception!(
    _core,
    ScenarioError,
    PyValueError,
    "A scenario file or override is invalid."
);
create_exception!(
    _core,
    Cancelled,
    pyo3::exceptions::PyRuntimeError,
    "A run was stopped because its `cancel` event was set (another run of a sweep failed or was interrupted)."
);
create_exception!(
    _core,
    EmulationError,
    pyo3::exceptions::PyRuntimeError,
    "Emulation could not start or run (privileges, namespaces, TUN devices, output files)."
);

fn load(text: &str, source: &str, seed: Option<u64>, overrides: Vec<String>) -> PyResult<Scenario> {
    let parsed =
        Scenario::from_toml(text, source).map_err(|e| ScenarioError::new_err(e.to_string()))?;
    let mut scenario = parsed
        .with_overrides(&overrides)
        .map_err(|e| ScenarioError::new_err(e.to_string()))?;
    if let Some(seed) = seed {
        scenario.seed = seed;
    }
    // Defaults that depend on other values (a symmetric uplink, the receive window) are filled
    // in here, so manifests, `check` and emulation all see the values that run.
    airlink_net::build::resolve(&scenario).map_err(|e| placed(text, source, e))
}

/// Wall time between two looks for signals (Ctrl-C, SIGTERM) and cancel requests while the
/// core runs with the GIL released: what a signalled run waits at most before it stops.
const SIGNAL_CHECK_INTERVAL: std::time::Duration = std::time::Duration::from_millis(50);
/// Time-series rows a simulation buffers before `run_until` returns for a drain: a Parquet row
/// group's worth, a few tens of MB here and as Python lists.
const DRAIN_ROWS: usize = 1 << 18;
/// Events between two looks at the wall clock: far less work than the check interval.
const SLICE_EVENTS: u64 = 4096;

/// Runs `sim` up to simulated time `until` (or its end) with the GIL released, re-taking it
/// every `SIGNAL_CHECK_INTERVAL` of wall time to run Python's signal handlers (a raised
/// KeyboardInterrupt or SystemExit ends the run here) and to look at `cancel`, an object with
/// `is_set()` such as a `threading.Event` (signals reach only the main thread; a sweep's
/// worker threads are stopped through it). Returns whether the run has finished; a run whose
/// state went over its `memory_budget` raises `ScenarioError` naming `source`.
fn run_checked(
    py: Python<'_>,
    sim: &mut airlink_sim::Simulation,
    until: Instant,
    cancel: Option<&Bound<'_, PyAny>>,
    source: &str,
) -> PyResult<bool> {
    loop {
        let reached = py.detach(|| {
            let slice_start = std::time::Instant::now();
            loop {
                if sim.run_until_at_most(until, SLICE_EVENTS) {
                    return true;
                }
                if slice_start.elapsed() >= SIGNAL_CHECK_INTERVAL {
                    return false;
                }
            }
        });
        if let Some(why) = sim.over_budget() {
            return Err(ScenarioError::new_err(format!("{source}: {why}")));
        }
        if reached {
            return Ok(sim.finished());
        }
        py.check_signals()?;
        if let Some(cancel) = cancel {
            if cancel.call_method0("is_set")?.is_truthy()? {
                return Err(Cancelled::new_err("run cancelled"));
            }
        }
    }
}

/// Runs `work` (which stops soon after its flag is set) on a helper thread with the GIL
/// released, running Python's signal handlers every `SIGNAL_CHECK_INTERVAL` meanwhile: a
/// handler's exception (KeyboardInterrupt, SystemExit) sets the flag and is raised once the
/// work has stopped.
#[cfg(all(feature = "emulation", target_os = "linux"))]
fn detach_stoppable<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(&std::sync::atomic::AtomicBool) -> T + Send,
) -> PyResult<T> {
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| work(&stop));
        loop {
            let done = py.detach(|| {
                let until = std::time::Instant::now() + SIGNAL_CHECK_INTERVAL;
                while !worker.is_finished() && std::time::Instant::now() < until {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                worker.is_finished()
            });
            if done {
                return Ok(worker.join().expect("the worker does not panic"));
            }
            if let Err(e) = py.check_signals() {
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
                py.detach(|| worker.join().expect("the worker does not panic"));
                return Err(e);
            }
        }
    })
}

/// A build error, placed in the scenario file where it can be.
fn placed(text: &str, source: &str, e: impl std::fmt::Display) -> PyErr {
    ScenarioError::new_err(
        airlink_scenario::ScenarioError::placed(source, text, e.to_string()).to_string(),
    )
}

fn build(
    s: &Scenario,
    record: bool,
    text: &str,
    source: &str,
) -> PyResult<airlink_sim::Simulation> {
    airlink_sim::Simulation::new(s, record).map_err(|e| placed(text, source, e))
}

/// A simulation run, advanced in chunks so its time series can be streamed to disk.
#[pyclass(module = "airlink._core")]
struct Simulation {
    /// Python objects must be shareable between threads; the models are only `Send`, and
    /// every method takes `&mut self` anyway, so the lock is never contended.
    sim: Mutex<airlink_sim::Simulation>,
    scenario: Scenario,
    source: String,
}

impl Simulation {
    fn sim(&mut self) -> &mut airlink_sim::Simulation {
        self.sim
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[pymethods]
impl Simulation {
    #[new]
    #[pyo3(signature = (text, source, seed=None, overrides=Vec::new(), record=true))]
    fn new(
        text: &str,
        source: &str,
        seed: Option<u64>,
        overrides: Vec<String>,
        record: bool,
    ) -> PyResult<Self> {
        let scenario = load(text, source, seed, overrides)?;
        let mut sim = build(&scenario, record, text, source)?;
        // `run_until` pauses when the series hold this many rows; the runner drains them then.
        sim.drain_every(DRAIN_ROWS);
        Ok(Simulation {
            sim: Mutex::new(sim),
            scenario,
            source: source.to_owned(),
        })
    }

    /// The run seed.
    #[getter]
    fn seed(&self) -> u64 {
        self.scenario.seed
    }

    /// The scenario's name.
    #[getter]
    fn name(&self) -> String {
        self.scenario.name.clone()
    }

    /// The fully resolved scenario (every default filled in), as TOML.
    fn resolved_scenario(&self) -> String {
        self.scenario.to_toml()
    }

    /// Simulated time in nanoseconds.
    #[getter]
    fn now_ns(&mut self) -> u64 {
        self.sim().now().as_nanos()
    }

    #[getter]
    fn finished(&mut self) -> bool {
        self.sim().finished()
    }

    /// Runs until simulated time `t_ns` or the end of the run; returns whether it finished.
    /// Returns earlier (unfinished, before `t_ns`) when the buffered series reach
    /// `DRAIN_ROWS` rows: drain them and call again.
    /// Signals are handled every 50 ms of wall time meanwhile (see `run_checked`).
    #[pyo3(signature = (t_ns, cancel=None))]
    fn run_until(
        &mut self,
        py: Python<'_>,
        t_ns: u64,
        cancel: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let source = self.source.clone();
        run_checked(py, self.sim(), Instant::from_nanos(t_ns), cancel, &source)
    }

    /// Hands over the buffered time series as {table: {column: list}} and empties them.
    fn drain<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let tables = self.sim().recorder().drain();
        tables_to_dict(py, tables)
    }

    /// The run summary as JSON (byte-identical for equal runs).
    fn summary_json(&mut self) -> String {
        self.sim().summary_json()
    }
}

/// Runs a scenario to the end without time series and returns its summary JSON. Releases
/// the GIL, so threads run scenarios in parallel; raises `Cancelled` soon after `cancel`
/// (an object with `is_set()`) is set.
#[pyfunction]
#[pyo3(signature = (text, source, seed=None, overrides=Vec::new(), cancel=None))]
fn run_summary(
    py: Python<'_>,
    text: &str,
    source: &str,
    seed: Option<u64>,
    overrides: Vec<String>,
    cancel: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    let scenario = load(text, source, seed, overrides)?;
    let mut sim = build(&scenario, false, text, source)?;
    run_checked(py, &mut sim, Instant::FAR_FUTURE, cancel, source)?;
    Ok(sim.summary_json())
}

/// Checks a scenario (and overrides) without running it; returns the resolved TOML.
#[pyfunction]
#[pyo3(signature = (text, source, overrides=Vec::new()))]
fn check_scenario(text: &str, source: &str, overrides: Vec<String>) -> PyResult<String> {
    let scenario = load(text, source, None, overrides)?;
    build(&scenario, false, text, source)?;
    Ok(scenario.to_toml())
}

/// What a checked scenario leaves to each flow's transport: [(flow index, [(key, value)])],
/// the preset's values with the scenario's over them.
/// One flow's index and its `(key, value)` transport rows.
type FlowRows = (usize, Vec<(String, String)>);

#[pyfunction]
#[pyo3(signature = (text, source, overrides=Vec::new()))]
fn transport_parameters(
    text: &str,
    source: &str,
    overrides: Vec<String>,
) -> PyResult<Vec<FlowRows>> {
    let scenario = load(text, source, None, overrides)?;
    let rows =
        airlink_net::build::transport_parameters(&scenario).map_err(|e| placed(text, source, e))?;
    Ok(rows
        .into_iter()
        .map(|(i, kv)| (i, kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()))
        .collect())
}

/// Every scenario key with what it accepts, its default and its documentation.
#[pyfunction]
fn scenario_keys(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    to_py(py, &airlink_scenario::keys::keys())
}

/// Warnings about a valid scenario that limits itself in a way its author probably did not
/// mean (an uplink too slow for the ACKs, a receive window below the bandwidth-delay product,
/// certain loss).
#[pyfunction]
#[pyo3(signature = (text, source, overrides=Vec::new()))]
fn scenario_warnings(text: &str, source: &str, overrides: Vec<String>) -> PyResult<Vec<String>> {
    let scenario = load(text, source, None, overrides)?;
    airlink_net::build::warnings(&scenario).map_err(|e| placed(text, source, e))
}

/// Engine benchmark: a hold model of `population` pending events for `n` pops; returns the
/// number of events processed (the caller times it).
#[pyfunction]
fn bench_event_queue(py: Python<'_>, population: u64, n: u64) -> u64 {
    py.detach(|| {
        use airlink_engine::{Duration, EventQueue, RngStream};
        let mut rng = RngStream::derive(1, "bench");
        let mut q = EventQueue::new();
        for i in 0..population {
            q.push(Instant::from_nanos(rng.below(1_000_000)), 0, i as u32, i);
        }
        for _ in 0..n {
            let (k, e) = q.pop().expect("population is positive");
            q.push(
                k.time + Duration::from_nanos(rng.below(1_000_000)),
                0,
                k.source,
                e,
            );
        }
        n
    })
}

/// The benchmark dumbbell as scenario text (see `airlink_sim::dumbbell`).
/// Every table's columns and their Arrow types, in the core's one definition of them:
/// `[(table, [(column, arrow_type), ...]), ...]`.
#[pyfunction]
fn table_schema() -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
    airlink_net::metrics::Recorder::schema()
}

#[pyfunction]
fn dumbbell_scenario(bottleneck_bps: u64, flows: u32, seconds: u32, rtt_ms: u32) -> String {
    airlink_sim::dumbbell::dumbbell_toml(bottleneck_bps, flows, seconds, rtt_ms)
}

/// Drained metrics tables as {table: {column: list}}.
fn tables_to_dict<'py>(
    py: Python<'py>,
    tables: Vec<(&'static str, airlink_net::metrics::Table)>,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    for (name, table) in tables {
        let cols = PyDict::new(py);
        for (col, values) in table.columns {
            match values {
                Column::U64(v) => cols.set_item(col, v)?,
                Column::I64(v) => cols.set_item(col, v)?,
                Column::F64(v) => cols.set_item(col, v)?,
                Column::Str(v) => cols.set_item(col, v)?,
            }
        }
        out.set_item(name, cols)?;
    }
    Ok(out)
}

#[cfg(all(feature = "emulation", target_os = "linux"))]
fn emu_err(e: airlink_emu::EmuError) -> PyErr {
    match e {
        airlink_emu::EmuError::Build(m) => ScenarioError::new_err(m),
        other => EmulationError::new_err(other.to_string()),
    }
}

/// A running real-time emulation: two network namespaces joined through the scenario's
/// links. Bound to the thread that created it (its helper processes die with that thread).
#[cfg(all(feature = "emulation", target_os = "linux"))]
#[pyclass(module = "airlink._core", unsendable)]
struct Emulation {
    emu: airlink_emu::Emulation,
    scenario: Scenario,
    /// The scenario's text and file name, to place errors found after the start.
    text: String,
    source: String,
    children: std::collections::HashMap<u32, std::process::Child>,
    traffic: emulation_summary::Traffic,
    /// Wall time of the start, and of the stop once stopped: the summary's `duration_s`.
    started: std::time::Instant,
    stopped: Option<std::time::Instant>,
}

#[cfg(all(feature = "emulation", target_os = "linux"))]
#[pymethods]
impl Emulation {
    /// Starts the emulation: namespaces, TUN devices, `[emulation]` settings, datapath; or,
    /// with `gateway = (client_side, server_side)`, the datapath between those interfaces.
    #[new]
    #[pyo3(signature = (text, source, seed=None, overrides=Vec::new(), pcap_dir=None, snaplen=128, realtime=true, guard_us=50, mlock=true,
                        max_in_flight_bytes=airlink_emu::datapath::DEFAULT_MAX_IN_FLIGHT_BYTES, gateway=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        text: &str,
        source: &str,
        seed: Option<u64>,
        overrides: Vec<String>,
        pcap_dir: Option<std::path::PathBuf>,
        snaplen: u32,
        realtime: bool,
        guard_us: u64,
        mlock: bool,
        max_in_flight_bytes: u64,
        gateway: Option<(String, String)>,
    ) -> PyResult<Self> {
        let scenario = load(text, source, seed, overrides)?;
        let opts = airlink_emu::EmuOptions {
            pcap_dir,
            snaplen,
            realtime,
            guard_ns: guard_us * 1000,
            mlock,
            max_in_flight_bytes,
        };
        let _ = py;
        let traffic = match gateway {
            Some(_) => emulation_summary::Traffic::Gateway,
            None => emulation_summary::Traffic::Commands,
        };
        let emu = match &gateway {
            Some((client_side, server_side)) => {
                airlink_emu::Emulation::start_gateway(&scenario, &opts, client_side, server_side)
            }
            None => airlink_emu::Emulation::start(&scenario, &opts),
        }
        .map_err(emu_err)?;
        Ok(Emulation {
            emu,
            scenario,
            text: text.to_owned(),
            source: source.to_owned(),
            children: Default::default(),
            traffic,
            started: std::time::Instant::now(),
            stopped: None,
        })
    }

    #[getter]
    fn seed(&self) -> u64 {
        self.scenario.seed
    }
    #[getter]
    fn name(&self) -> String {
        self.scenario.name.clone()
    }
    #[getter]
    fn server_address(&self) -> &'static str {
        self.emu.server_address()
    }
    #[getter]
    fn client_address(&self) -> &'static str {
        self.emu.client_address()
    }
    /// Changes made outside the namespaces (e.g. a congestion control allowed host-wide).
    #[getter]
    fn host_changes(&self) -> Vec<String> {
        self.emu.host_changes().to_vec()
    }
    /// Datapath wake-ups so far.
    #[getter]
    fn wakeups(&self) -> u64 {
        self.emu.wakeups()
    }
    /// The scenario's stop time in seconds (when airlink's own flows stop at the latest).
    #[getter]
    fn stop_s(&self) -> f64 {
        self.scenario.stop.0.as_secs_f64()
    }
    fn resolved_scenario(&self) -> String {
        self.scenario.to_toml()
    }
    /// Sysctls read back from each namespace: {"client": {key: value}, "server": {...}}.
    fn sysctls<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for (side, kv) in self.emu.sysctls() {
            let d = PyDict::new(py);
            for (k, v) in kv {
                d.set_item(k, v)?;
            }
            out.set_item(*side, d)?;
        }
        Ok(out)
    }

    /// Starts `sh -c command` in the "client" or "server" namespace; output goes to the
    /// given files (or is inherited). Returns a handle for `poll`/`kill`.
    #[pyo3(signature = (side, command, stdout=None, stderr=None, interactive=false))]
    fn spawn(
        &mut self,
        side: &str,
        command: &str,
        stdout: Option<std::path::PathBuf>,
        stderr: Option<std::path::PathBuf>,
        interactive: bool,
    ) -> PyResult<u32> {
        let role = match side {
            "client" => airlink_emu::Role::Client,
            "server" => airlink_emu::Role::Server,
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown side {other:?}: expected \"client\" or \"server\""
                )))
            }
        };
        let open = |p: Option<std::path::PathBuf>| -> PyResult<Option<std::fs::File>> {
            p.map(|p| {
                std::fs::File::create(&p).map_err(|e| {
                    EmulationError::new_err(format!("cannot write {}: {e}", p.display()))
                })
            })
            .transpose()
        };
        let child = self
            .emu
            .spawn(role, command, open(stdout)?, open(stderr)?, !interactive)
            .map_err(emu_err)?;
        let id = child.id();
        self.children.insert(id, child);
        Ok(id)
    }

    /// The exit code of a spawned command (negative: killed by that signal), or None while it runs.
    fn poll(&mut self, handle: u32) -> PyResult<Option<i32>> {
        use std::os::unix::process::ExitStatusExt;
        let child = self
            .children
            .get_mut(&handle)
            .ok_or_else(|| PyValueError::new_err(format!("no command {handle}")))?;
        Ok(child
            .try_wait()
            .map_err(|e| EmulationError::new_err(format!("waitpid: {e}")))?
            .map(|st| st.code().unwrap_or_else(|| -st.signal().unwrap_or(0))))
    }

    /// Sends SIGTERM (or SIGKILL with `force`) to a spawned command.
    #[pyo3(signature = (handle, force=false))]
    fn kill(&mut self, handle: u32, force: bool) {
        if self.children.contains_key(&handle) {
            let sig = if force { libc::SIGKILL } else { libc::SIGTERM };
            // SAFETY: signalling a child of ours that has not been reaped.
            unsafe { libc::kill(handle as libc::pid_t, sig) };
        }
    }

    /// Runs the scenario's flows with airlink's own transports (TCP variants, DCCP, UDP
    /// media) over UDP sockets in the two namespaces, from their start times on.
    fn start_flows(&mut self) -> PyResult<()> {
        // The emulator's encoding of airlink's TCP (airlink-transport `codec`) carries neither ECE/CWR
        // nor the IP ECN field yet: an ECN flow would silently run without ECN.
        let ecn = self
            .scenario
            .flow
            .iter()
            .position(|f| f.ecn && f.protocol == airlink_scenario::Protocol::Tcp);
        if let Some(i) = ecn {
            return Err(placed(
                &self.text,
                &self.source,
                format!(
                    "flow.{i}.ecn: airlink's own TCP cannot use ECN in emulation yet (its \
                     segments cross the emulated links in an encoding without ECE, CWR and the \
                     IP ECN field): run the scenario in simulation, or set flow.{i}.ecn = false; \
                     the kernel's TCP (--client/--server) negotiates ECN by \
                     `net.ipv4.tcp_ecn` in [emulation] sysctl"
                ),
            ));
        }
        self.emu.start_flows().map_err(emu_err)?;
        self.traffic = emulation_summary::Traffic::OwnFlows;
        Ok(())
    }

    /// The flows of `start_flows` have finished (or the scenario's stop time passed).
    #[getter]
    fn flows_finished(&self) -> bool {
        self.emu.flows_finished()
    }

    /// The time series collected so far as {table: {column: list}}, emptied.
    fn drain<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        tables_to_dict(py, self.emu.drain())
    }

    /// Listens for live control (`airlink ctl`) on a Unix socket at `path` until the run stops.
    fn listen(&mut self, path: std::path::PathBuf) -> PyResult<()> {
        self.emu.listen(&path).map_err(emu_err)
    }

    /// Answers one control request (an object of the socket's protocol, such as
    /// `{"op": "state"}`) directly, as the socket would.
    fn control<'py>(
        &self,
        py: Python<'py>,
        request: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let request: serde_json::Value = pythonize::depythonize(request)?;
        let answer: serde_json::Value =
            serde_json::from_str(&self.emu.control(&request.to_string()))
                .expect("control answers are JSON");
        to_py(py, &answer)
    }

    /// Stops everything (commands, namespaces, datapath); again, it does nothing.
    fn stop(&mut self) {
        self.emu.stop();
        self.stopped.get_or_insert_with(std::time::Instant::now);
        for (_, mut c) in self.children.drain() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Stops the emulation (if it still runs) and returns its summary, completed with how the
    /// run went as the caller saw it: its `commands` (dicts with `side`, `command`, `start_s`,
    /// and `ran`, `end_s`, `exit_code` where known), what `interrupted` it or whether it
    /// `timed_out`, in gateway mode what it was `stopped_by`, the caller's `warnings` and
    /// iperf3's parsed reports (`iperf3`). `completed` and `duration_s` are decided here.
    #[pyo3(signature = (*, commands=None, interrupted=None, timed_out=false, stopped_by=None, warnings=Vec::new(), iperf3=None))]
    #[allow(clippy::too_many_arguments)]
    fn summary<'py>(
        &mut self,
        py: Python<'py>,
        commands: Option<&Bound<'py, PyAny>>,
        interrupted: Option<String>,
        timed_out: bool,
        stopped_by: Option<String>,
        warnings: Vec<String>,
        iperf3: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let outcome = emulation_summary::Outcome {
            commands: commands
                .map(pythonize::depythonize)
                .transpose()
                .map_err(|e| PyValueError::new_err(format!("commands: {e}")))?
                .unwrap_or_default(),
            interrupted,
            timed_out,
            stopped_by,
            warnings,
            iperf3: iperf3
                .map(pythonize::depythonize)
                .transpose()
                .map_err(|e| PyValueError::new_err(format!("iperf3: {e}")))?,
        };
        self.stop();
        let stopped = self.stopped.unwrap_or_else(std::time::Instant::now);
        let summary = emulation_summary::EmulationSummary::complete(
            self.emu.stop(),
            self.traffic,
            (stopped - self.started).as_secs_f64(),
            outcome,
        );
        to_py(py, &summary)
    }
}

#[cfg(all(feature = "emulation", target_os = "linux"))]
fn timing_method(method: &str) -> PyResult<airlink_emu::timing::Method> {
    use airlink_emu::timing;
    timing::Method::parse(method).ok_or_else(|| {
        let names: Vec<String> = timing::Method::ALL
            .iter()
            .map(|m| serde_json::to_string(m).unwrap())
            .collect();
        PyValueError::new_err(format!(
            "unknown method {method:?}: expected one of {}",
            names.join(", ")
        ))
    })
}

/// Measures `method` over `series` (ns) on a thread of its own (SCHED_FIFO when `realtime`
/// and permitted); its statistics, with each request's actual duration when `with_actual`.
#[cfg(all(feature = "emulation", target_os = "linux"))]
fn timing_run(
    py: Python<'_>,
    m: airlink_emu::timing::Method,
    series: Vec<u64>,
    realtime: bool,
    with_actual: bool,
) -> PyResult<Bound<'_, PyAny>> {
    use airlink_emu::timing;
    let ((stats, actual), rt) = py.detach(move || {
        std::thread::spawn(move || {
            let rt = realtime.then(|| airlink_emu::rt::apply(true, false));
            (timing::measure_series(m, &series), rt)
        })
        .join()
        .expect("timing thread")
    });
    let result = typed::TimingStats {
        stats,
        realtime: rt.map(|r| r.sched_fifo.is_none()),
        actual_ns: with_actual.then_some(actual),
    };
    to_py(py, &result)
}

/// Puts back the offloads a killed gateway left off on `iface`; returns those it turned on.
#[cfg(all(feature = "emulation", target_os = "linux"))]
#[pyfunction]
fn gateway_restore(iface: &str) -> Vec<String> {
    airlink_emu::gateway::restore_stale(iface)
}

/// Measures one way of waiting (airlink timing); returns its statistics.
#[cfg(all(feature = "emulation", target_os = "linux"))]
#[pyfunction]
#[pyo3(signature = (method, requests=1000, min_ms=1.0, max_ms=100.0, seed=1, realtime=true))]
fn timing_measure<'py>(
    py: Python<'py>,
    method: &str,
    requests: usize,
    min_ms: f64,
    max_ms: f64,
    seed: u64,
    realtime: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let m = timing_method(method)?;
    timing_run(
        py,
        m,
        airlink_emu::timing::request_series(requests, min_ms, max_ms, seed),
        realtime,
        false,
    )
}

/// Measures one way of waiting over the given requests (ns); its statistics and each request's
/// actual duration (`actual_ns`).
#[cfg(all(feature = "emulation", target_os = "linux"))]
#[pyfunction]
#[pyo3(signature = (method, requests_ns, realtime=true))]
fn timing_measure_series<'py>(
    py: Python<'py>,
    method: &str,
    requests_ns: Vec<u64>,
    realtime: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let m = timing_method(method)?;
    timing_run(py, m, requests_ns, realtime, true)
}

/// The Seawind study's request series: `n` whole milliseconds uniform on 0..=99 (ns).
#[cfg(all(feature = "emulation", target_os = "linux"))]
#[pyfunction]
#[pyo3(signature = (n=1000, seed=1))]
fn timing_whole_ms_series(n: usize, seed: u64) -> Vec<u64> {
    airlink_emu::timing::whole_ms_series(n, seed)
}

/// The study's 1999 kernel timers modelled over the requests (ns): one row per Table 1
/// method (statistics under the timer's name, `jiffy_ns`, `slack`, `actual_ns`).
#[cfg(all(feature = "emulation", target_os = "linux"))]
#[pyfunction]
fn timing_model(py: Python<'_>, requests_ns: Vec<u64>) -> PyResult<Bound<'_, PyAny>> {
    use airlink_emu::timing;
    let rows: Vec<typed::TimingModelRow> = timing::MODEL_1999
        .iter()
        .map(|&t| {
            let actual = timing::model_series(t, &requests_ns);
            let method = if t.slack {
                timing::Method::SleepWithSlack
            } else {
                timing::Method::SelectRelative
            };
            typed::TimingModelRow {
                stats: timing::MethodStats {
                    name: t.name,
                    ..timing::stats(method, &requests_ns, &actual, 0.0)
                },
                jiffy_ns: t.jiffy_ns,
                slack: t.slack,
                actual_ns: actual,
            }
        })
        .collect();
    to_py(py, &rows)
}

/// Machine checks for emulation (airlink doctor).
#[cfg(all(feature = "emulation", target_os = "linux"))]
#[pyfunction]
fn doctor(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let checks = py.detach(airlink_emu::doctor::checks);
    to_py(py, &checks)
}

/// A bit rate written as in scenarios ("120 Mbit/s"), in bit/s; ValueError with the
/// scenario parser's message otherwise.
#[pyfunction]
fn parse_rate(text: &str) -> PyResult<u64> {
    text.parse::<airlink_scenario::units::Rate>()
        .map(|r| r.0)
        .map_err(PyValueError::new_err)
}

#[cfg(all(feature = "emulation", target_os = "linux"))]
fn socket_addr(what: &str, text: &str) -> PyResult<std::net::SocketAddrV4> {
    text.parse().map_err(|_| {
        PyValueError::new_err(format!(
            "{what} {text:?}: expected an IPv4 address and port, e.g. 10.77.0.2:5201"
        ))
    })
}

#[cfg(all(feature = "emulation", target_os = "linux"))]
fn duration_ns(what: &str, seconds: f64) -> PyResult<u64> {
    if !(seconds.is_finite() && seconds > 0.0 && seconds < 1e6) {
        return Err(PyValueError::new_err(format!(
            "{what} {seconds} s: must be a positive number of seconds"
        )));
    }
    Ok((seconds * 1e9) as u64)
}

/// airlink's UDP packet source (udpgen): sends `size`-byte payloads to `to` ("ADDR:PORT") at
/// `rate_bps` (IP bytes; 0 = as fast as possible) for `seconds`, with UDP GSO when `gso` and
/// the kernel allows it; returns its report.
#[cfg(all(feature = "emulation", target_os = "linux"))]
#[pyfunction]
#[pyo3(signature = (to, size=72, rate_bps=0, seconds=1.0, batch=64, gso=true))]
fn udpgen_send<'py>(
    py: Python<'py>,
    to: &str,
    size: usize,
    rate_bps: u64,
    seconds: f64,
    batch: usize,
    gso: bool,
) -> PyResult<Bound<'py, PyAny>> {
    use airlink_emu::udpgen;
    let cfg = udpgen::SendConfig {
        to: socket_addr("destination", to)?,
        payload: size,
        rate_bps,
        duration_ns: duration_ns("duration", seconds)?,
        batch,
        gso,
    };
    cfg.validate().map_err(PyValueError::new_err)?;
    let r =
        detach_stoppable(py, |stop| udpgen::send(&cfg, stop))?.map_err(EmulationError::new_err)?;
    to_py(py, &r)
}

/// airlink's UDP packet sink (udpgen): counts what arrives at `bind` ("ADDR:PORT") for at most
/// `seconds`, or until nothing arrived for `idle` seconds after the first packet (0 = never);
/// creates the file `ready` once listening.
#[cfg(all(feature = "emulation", target_os = "linux"))]
#[pyfunction]
#[pyo3(signature = (bind, seconds=10.0, idle=1.0, batch=64, ready=None))]
fn udpgen_recv<'py>(
    py: Python<'py>,
    bind: &str,
    seconds: f64,
    idle: f64,
    batch: usize,
    ready: Option<std::path::PathBuf>,
) -> PyResult<Bound<'py, PyAny>> {
    use airlink_emu::udpgen;
    let idle_ns = if idle == 0.0 {
        0
    } else {
        duration_ns("idle timeout", idle)?
    };
    let cfg = udpgen::RecvConfig {
        bind: socket_addr("bind address", bind)?,
        duration_ns: duration_ns("duration", seconds)?,
        idle_ns,
        batch,
        ready,
    };
    cfg.validate().map_err(PyValueError::new_err)?;
    let r =
        detach_stoppable(py, |stop| udpgen::recv(&cfg, stop))?.map_err(EmulationError::new_err)?;
    to_py(py, &r)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("EmulationError", m.py().get_type::<EmulationError>())?;
    m.add("Cancelled", m.py().get_type::<Cancelled>())?;
    m.add_class::<Emulation>()?;
    m.add_function(wrap_pyfunction!(timing_measure, m)?)?;
    m.add_function(wrap_pyfunction!(gateway_restore, m)?)?;
    m.add_function(wrap_pyfunction!(timing_measure_series, m)?)?;
    m.add_function(wrap_pyfunction!(timing_whole_ms_series, m)?)?;
    m.add_function(wrap_pyfunction!(timing_model, m)?)?;
    m.add_function(wrap_pyfunction!(doctor, m)?)?;
    m.add_function(wrap_pyfunction!(udpgen_send, m)?)?;
    m.add_function(wrap_pyfunction!(udpgen_recv, m)?)?;
    m.add_function(wrap_pyfunction!(parse_rate, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("EMULATION", EMULATION)?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add_class::<Simulation>()?;
    m.add_function(wrap_pyfunction!(run_summary, m)?)?;
    m.add_function(wrap_pyfunction!(check_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(transport_parameters, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_warnings, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_keys, m)?)?;
    m.add_function(wrap_pyfunction!(bench_event_queue, m)?)?;
    m.add_function(wrap_pyfunction!(dumbbell_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(table_schema, m)?)?;
    m.add_function(wrap_pyfunction!(typed::result_schemas, m)?)?;
    Ok(())
}
