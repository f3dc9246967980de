//! `flakeid_bindings::Error` as the exception class of its code, from the
//! pure-Python `flakeid_rs._errors`.

use flakeid_bindings::{Error, ErrorKind};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyModule};

static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// The exception for `error`, ready to raise.
pub(crate) fn raise(error: Error) -> PyErr {
    Python::attach(|py| match exception(py, &error) {
        Ok(err) => err,
        // Only if flakeid_rs._errors cannot be imported (a broken install).
        Err(import) => import,
    })
}

fn exception(py: Python<'_>, error: &Error) -> PyResult<PyErr> {
    let module = ERRORS.get_or_try_init(py, || {
        PyModule::import(py, "flakeid_rs._errors").map(Bound::unbind)
    })?;
    let classes = module.bind(py).getattr("BY_CODE")?;
    let class = classes.get_item(error.kind().code())?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("detail", error.detail())?;
    match error.kind() {
        ErrorKind::SequenceExhausted => {
            let secs = error.retry_after().unwrap_or_default().as_secs_f64();
            kwargs.set_item("retry_after", secs)?;
        }
        ErrorKind::ClockBehind => {
            let secs = error.behind().unwrap_or_default().as_secs_f64();
            kwargs.set_item("behind", secs)?;
        }
        ErrorKind::Expired => kwargs.set_item("last_ms", error.last_ms().unwrap_or_default())?,
        _ => {}
    }
    let instance = class.call((error.message(),), Some(&kwargs))?;
    Ok(PyErr::from_value(instance))
}
