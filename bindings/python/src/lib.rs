//! `flakeid_rs._native`: the extension module of the Python package
//! `flakeid-rs`. Every class and function here converts Python arguments
//! (`args.rs`), calls `flakeid_bindings`, and raises its errors as
//! `flakeid_rs` exceptions (`errors.rs`). The public names, their
//! docstrings' details and the type stubs are in `python/flakeid_rs/`.

mod args;
mod errors;
mod generator;
mod layout;
mod source;

use pyo3::prelude::*;

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<generator::Generator>()?;
    m.add_class::<generator::Health>()?;
    m.add_class::<layout::Layout>()?;
    m.add_class::<layout::Decoded>()?;
    m.add_class::<source::Lease>()?;
    m.add_class::<source::Persist>()?;
    m.add_function(wrap_pyfunction!(layout::encode, m)?)?;
    m.add_function(wrap_pyfunction!(layout::parse_id, m)?)?;
    m.add_function(wrap_pyfunction!(set_fork_detection_for_tests, m)?)?;
    Ok(())
}

/// Turns fork detection off (or on again), for the test that shows the
/// fork tests fail without it. Never call it otherwise.
#[pyfunction]
#[pyo3(name = "_set_fork_detection_for_tests")]
fn set_fork_detection_for_tests(on: bool) {
    flakeid_bindings::set_fork_detection_for_tests(on);
}
