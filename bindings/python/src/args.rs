//! Python arguments to Rust values, each wrong type or value raised as
//! `flakeid_rs.InvalidType` or `flakeid_rs.InvalidArgument` naming the
//! argument (never PyO3's bare `TypeError` or `OverflowError`).

use std::time::Duration;

use flakeid_bindings::{Error, ErrorKind};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyMapping, PyString};

use crate::errors::raise;

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

fn wrong_type(what: &str, expected: &str, value: &Bound<'_, PyAny>) -> PyErr {
    raise(Error::new(
        ErrorKind::InvalidType,
        format!("{what} must be {expected}, not {}", type_name(value)),
    ))
}

/// An `int` (not a `bool`) from 0 to `max`.
pub(crate) fn uint(value: &Bound<'_, PyAny>, what: &str, max: u64) -> PyResult<u64> {
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        return Err(wrong_type(what, "an int", value));
    }
    match value.extract::<u64>() {
        Ok(n) if n <= max => Ok(n),
        _ => Err(raise(Error::invalid(format!(
            "{what} must be an integer from 0 to {max}, not {}",
            value.str().map(|s| s.to_string()).unwrap_or_default()
        )))),
    }
}

/// An optional `uint`: `None` (or absent) is `None`.
pub(crate) fn opt_uint(
    value: Option<&Bound<'_, PyAny>>,
    what: &str,
    max: u64,
) -> PyResult<Option<u64>> {
    value
        .filter(|v| !v.is_none())
        .map(|v| uint(v, what, max))
        .transpose()
}

/// A count of IDs: an `int` from 0 to `usize::MAX`.
pub(crate) fn count(value: &Bound<'_, PyAny>, what: &str) -> PyResult<usize> {
    uint(value, what, usize::MAX as u64).map(|n| n as usize)
}

/// A `str`.
pub(crate) fn string(value: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    match value.cast::<PyString>() {
        Ok(s) => s
            .to_cow()
            .map(|s| s.into_owned())
            .map_err(|_| raise(Error::invalid(format!("{what} must be valid Unicode")))),
        Err(_) => Err(wrong_type(what, "a str", value)),
    }
}

/// An optional `str`.
pub(crate) fn opt_string(value: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<String>> {
    value
        .filter(|v| !v.is_none())
        .map(|v| string(v, what))
        .transpose()
}

/// A `bool`.
pub(crate) fn boolean(value: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<bool> {
    match value.filter(|v| !v.is_none()) {
        None => Ok(false),
        Some(v) => match v.cast::<PyBool>() {
            Ok(b) => Ok(b.is_true()),
            Err(_) => Err(wrong_type(what, "a bool", v)),
        },
    }
}

/// A duration: seconds as an `int` or `float`, or a `datetime.timedelta`.
pub(crate) fn duration(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Duration> {
    if is_timedelta(value)? {
        let secs: f64 = value.call_method0("total_seconds")?.extract()?;
        return flakeid_bindings::duration(secs, 1.0, what).map_err(raise);
    }
    if value.is_instance_of::<PyBool>()
        || !(value.is_instance_of::<PyInt>() || value.is_instance_of::<PyFloat>())
    {
        return Err(wrong_type(
            what,
            "a number of seconds or a datetime.timedelta",
            value,
        ));
    }
    let secs: f64 = value
        .extract()
        .map_err(|_| raise(Error::invalid(format!("{what} is too large a number"))))?;
    flakeid_bindings::duration(secs, 1.0, what).map_err(raise)
}

/// An optional duration.
pub(crate) fn opt_duration(
    value: Option<&Bound<'_, PyAny>>,
    what: &str,
) -> PyResult<Option<Duration>> {
    value
        .filter(|v| !v.is_none())
        .map(|v| duration(v, what))
        .transpose()
}

/// A list or tuple of `str` (a lone `str` is refused: it would be read
/// character by character).
pub(crate) fn strings(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<String>> {
    if value.is_instance_of::<PyString>() {
        return Err(wrong_type(what, "a list of str", value));
    }
    let items = value
        .try_iter()
        .map_err(|_| wrong_type(what, "a list of str", value))?;
    let mut out = Vec::new();
    for item in items {
        out.push(string(&item?, &format!("each of {what}"))?);
    }
    if out.is_empty() {
        return Err(raise(Error::invalid(format!("{what} must not be empty"))));
    }
    Ok(out)
}

/// A mapping of `str` to `int` (node fields).
pub(crate) fn fields(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<(String, u64)>> {
    let mapping = value
        .cast::<PyMapping>()
        .map_err(|_| wrong_type(what, "a mapping of str to int", value))?;
    let mut out = Vec::new();
    for item in mapping.items()?.iter() {
        let (name, field_value): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
        let name = string(&name, &format!("a key of {what}"))?;
        let field_value = uint(&field_value, &format!("{what}[{name:?}]"), u64::MAX)?;
        out.push((name, field_value));
    }
    Ok(out)
}

fn is_timedelta(value: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = value.py();
    let timedelta = py.import("datetime")?.getattr("timedelta")?;
    value.is_instance(&timedelta)
}
