//! `airlink._core`: the Rust core seen from Python. This file is the one place where Rust
//! errors become Python exceptions: a bad scenario raises `ScenarioError` (a `ValueError`)
//! whose message names the file, line and column.

use airlink_engine::Instant;
use airlink_scenario::Scenario;
use airlink_sim::metrics::Column;
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Mutex;

create_exception!(_core, ScenarioError, PyValueError, "A scenario file or override is invalid.");

fn load(text: &str, source: &str, seed: Option<u64>, overrides: Vec<String>) -> PyResult<Scenario> {
    let parsed = Scenario::from_toml(text, source).map_err(|e| ScenarioError::new_err(e.to_string()))?;
    let mut scenario = parsed.with_overrides(&overrides).map_err(|e| ScenarioError::new_err(e.to_string()))?;
    if let Some(seed) = seed {
        scenario.seed = seed;
    }
    Ok(scenario)
}

fn build(s: &Scenario, record: bool) -> PyResult<airlink_sim::Simulation> {
    airlink_sim::Simulation::new(s, record).map_err(|e| ScenarioError::new_err(e.to_string()))
}

/// A simulation run, advanced in chunks so its time series can be streamed to disk.
#[pyclass(module = "airlink._core")]
struct Simulation {
    /// Python objects must be shareable between threads; the models are only `Send`, and
    /// every method takes `&mut self` anyway, so the lock is never contended.
    sim: Mutex<airlink_sim::Simulation>,
    scenario: Scenario,
}

impl Simulation {
    fn sim(&mut self) -> &mut airlink_sim::Simulation {
        self.sim.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[pymethods]
impl Simulation {
    #[new]
    #[pyo3(signature = (text, source, seed=None, overrides=Vec::new(), record=true))]
    fn new(text: &str, source: &str, seed: Option<u64>, overrides: Vec<String>, record: bool) -> PyResult<Self> {
        let scenario = load(text, source, seed, overrides)?;
        let sim = build(&scenario, record)?;
        Ok(Simulation { sim: Mutex::new(sim), scenario })
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
    fn run_until(&mut self, py: Python<'_>, t_ns: u64) -> bool {
        let sim = self.sim();
        py.detach(|| sim.run_until(Instant::from_nanos(t_ns)))
    }

    /// Hands over the buffered time series as {table: {column: list}} and empties them.
    fn drain<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for (name, table) in self.sim().recorder().drain() {
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

    /// The run summary as JSON (byte-identical for equal runs).
    fn summary_json(&mut self) -> String {
        self.sim().summary_json()
    }
}

/// Runs a scenario to the end without time series and returns its summary JSON. Releases
/// the GIL, so threads run scenarios in parallel.
#[pyfunction]
#[pyo3(signature = (text, source, seed=None, overrides=Vec::new()))]
fn run_summary(py: Python<'_>, text: &str, source: &str, seed: Option<u64>, overrides: Vec<String>) -> PyResult<String> {
    let scenario = load(text, source, seed, overrides)?;
    let mut sim = build(&scenario, false)?;
    Ok(py.detach(move || {
        sim.run();
        sim.summary_json()
    }))
}

/// Checks a scenario (and overrides) without running it; returns the resolved TOML.
#[pyfunction]
#[pyo3(signature = (text, source, overrides=Vec::new()))]
fn check_scenario(text: &str, source: &str, overrides: Vec<String>) -> PyResult<String> {
    let scenario = load(text, source, None, overrides)?;
    build(&scenario, false)?;
    Ok(scenario.to_toml())
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
            q.push(k.time + Duration::from_nanos(rng.below(1_000_000)), 0, k.source, e);
        }
        n
    })
}

/// The benchmark dumbbell as scenario text (see `airlink_sim::dumbbell`).
#[pyfunction]
fn dumbbell_scenario(bottleneck_bps: u64, flows: u32, seconds: u32, rtt_ms: u32) -> String {
    airlink_sim::dumbbell::dumbbell_toml(bottleneck_bps, flows, seconds, rtt_ms)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add_class::<Simulation>()?;
    m.add_function(wrap_pyfunction!(run_summary, m)?)?;
    m.add_function(wrap_pyfunction!(check_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(bench_event_queue, m)?)?;
    m.add_function(wrap_pyfunction!(dumbbell_scenario, m)?)?;
    Ok(())
}
