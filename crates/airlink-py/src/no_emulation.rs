//! The emulation functions of a build without the emulator (built with `--no-default-features`,
//! or for an OS other than Linux): the same names as the real ones, so the Python package
//! imports and simulates unchanged, and every emulation verb fails with one clear line.
//! `doctor` answers (with a failing required check) instead of raising.

use crate::EmulationError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

/// Why this build cannot emulate.
pub(crate) const NO_EMULATION: &str = if cfg!(target_os = "linux") {
    "this build has no emulation (built without the `emulation` feature); \
     simulation works; rebuild with default features (pip install .) to emulate"
} else {
    "this build has no emulation (not Linux: emulation needs Linux network namespaces and TUN devices); \
     simulation works"
};

fn refused<T>() -> PyResult<T> {
    Err(EmulationError::new_err(NO_EMULATION))
}

/// Stands for the real-time emulation; constructing it raises `EmulationError`.
#[pyclass(module = "airlink._core")]
pub(crate) struct Emulation;

#[pymethods]
impl Emulation {
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        refused()
    }
}

/// Machine checks for emulation (airlink doctor): one failing required check.
#[pyfunction]
pub(crate) fn doctor(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    crate::to_py(
        py,
        &serde_json::json!([{ "name": "emulation in this build", "ok": false, "required": true, "detail": NO_EMULATION }]),
    )
}

macro_rules! refusing {
    ($($name:ident),*) => {$(
        /// Needs the emulator: raises `EmulationError` in this build.
        #[pyfunction]
        #[pyo3(signature = (*_args, **_kwargs))]
        pub(crate) fn $name(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Py<PyAny>> {
            refused()
        }
    )*};
}

refusing!(
    gateway_restore,
    timing_measure,
    timing_measure_series,
    timing_whole_ms_series,
    timing_model,
    udpgen_send,
    udpgen_recv
);
