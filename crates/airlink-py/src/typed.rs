//! Typed results across the boundary. The core hands Python its results as dicts and lists made
//! from the serde structs that define them (`pythonize`: no JSON text in between), and
//! [`result_schemas`] gives the JSON Schema of those same structs (`schemars`), from which
//! `scripts/gen_result_types.py` writes `airlink/_types.py`: one `TypedDict` per struct, the
//! return types of `_core.pyi`. A field added in Rust thus reaches the stub through a
//! regeneration that `tests/test_result_types.py` insists on.
//!
//! The simulation summary is the exception: it crosses as its JSON text (`summary_json`,
//! `run_summary`), because that text is the result file, byte-identical for equal runs (the
//! goldens compare bytes; Python's float formatting differs from serde_json's). Its parse is a
//! `RunSummary`.

use pyo3::prelude::*;
use serde::Serialize;

/// `value` as Python objects: structs and maps become dicts (in field order), sequences lists,
/// fixed-size arrays and tuples tuples, `None` None.
pub(crate) fn to_py<'py, T: Serialize + ?Sized>(
    py: Python<'py>,
    value: &T,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(pythonize::pythonize(py, value)?)
}

/// The JSON Schema (2020-12, as the structs serialise) of every typed result:
/// `{"roots": {python name: {"$ref": "#/$defs/..."}}, "$defs": {...}}`. In a build without the
/// emulator only the simulation's results are there.
#[pyfunction]
pub(crate) fn result_schemas(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator();
    let mut roots = serde_json::Map::new();
    let mut root = |name: &str, schema: schemars::Schema| {
        roots.insert(name.to_owned(), schema.to_value());
    };
    root(
        "RunSummary",
        generator.subschema_for::<airlink_net::summary::Summary>(),
    );
    root(
        "ScenarioKey",
        generator.subschema_for::<airlink_scenario::keys::KeyDoc>(),
    );
    #[cfg(all(feature = "emulation", target_os = "linux"))]
    {
        use crate::emulation_summary::EmulationSummary;
        use airlink_emu::{doctor, udpgen};
        root(
            "EmulationSummary",
            generator.subschema_for::<EmulationSummary>(),
        );
        root("DoctorCheck", generator.subschema_for::<doctor::Check>());
        root("TimingStats", generator.subschema_for::<TimingStats>());
        root(
            "TimingModelRow",
            generator.subschema_for::<TimingModelRow>(),
        );
        root(
            "UdpgenSendReport",
            generator.subschema_for::<udpgen::SendReport>(),
        );
        root(
            "UdpgenRecvReport",
            generator.subschema_for::<udpgen::RecvReport>(),
        );
    }
    let defs = generator.take_definitions(true);
    to_py(py, &serde_json::json!({"roots": roots, "$defs": defs}))
}

/// One way of waiting measured (`timing_measure`, `timing_measure_series`).
#[cfg(all(feature = "emulation", target_os = "linux"))]
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct TimingStats {
    #[serde(flatten)]
    pub stats: airlink_emu::timing::MethodStats,
    /// Whether the measuring thread ran under SCHED_FIFO (null: not asked for).
    pub realtime: Option<bool>,
    /// Each request's actual duration, ns (`timing_measure_series` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual_ns: Option<Vec<i64>>,
}

/// One 1999 kernel timer modelled over a series (`timing_model`); `name` is the timer's.
#[cfg(all(feature = "emulation", target_os = "linux"))]
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct TimingModelRow {
    #[serde(flatten)]
    pub stats: airlink_emu::timing::MethodStats,
    pub jiffy_ns: i64,
    pub slack: bool,
    pub actual_ns: Vec<i64>,
}
