//! `Layout`, `Decoded`, and the string forms of an ID.

use flakeid_bindings::flakeid::{self, FieldKind, Parts};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::args;
use crate::errors::raise;

/// The bit plan of an ID: a preset name or the library's spec text.
#[pyclass(frozen, module = "flakeid_rs", eq)]
#[derive(Clone, PartialEq)]
pub(crate) struct Layout {
    pub(crate) layout: flakeid::Layout,
}

/// A `str` spec or a `Layout`.
pub(crate) fn layout_arg(value: &Bound<'_, PyAny>) -> PyResult<flakeid::Layout> {
    if let Ok(layout) = value.cast::<Layout>() {
        return Ok(layout.get().layout.clone());
    }
    let spec = args::string(value, "layout")?;
    flakeid_bindings::parse_layout(&spec).map_err(raise)
}

#[pymethods]
impl Layout {
    #[new]
    fn new(spec: &Bound<'_, PyAny>) -> PyResult<Layout> {
        Ok(Layout {
            layout: layout_arg(spec)?,
        })
    }

    /// The spec text (`epoch=... unit=... fields=...`), which reads back as
    /// an equal layout.
    #[getter]
    fn spec(&self) -> String {
        self.layout.to_string()
    }

    /// The epoch, in Unix milliseconds.
    #[getter]
    fn epoch_ms(&self) -> u64 {
        self.layout.epoch_ms()
    }

    /// Milliseconds per tick.
    #[getter]
    fn unit_ms(&self) -> u64 {
        self.layout.unit_ms()
    }

    /// The largest node id (all node fields as one number).
    #[getter]
    fn max_node_id(&self) -> u64 {
        self.layout.max_node_id()
    }

    /// IDs per tick per node.
    #[getter]
    fn capacity_per_tick(&self) -> u64 {
        self.layout.capacity_per_tick()
    }

    /// The last instant the layout can encode, in Unix milliseconds.
    #[getter]
    fn last_ms(&self) -> u64 {
        self.layout.last_ms()
    }

    /// The fields from the highest bit down: `(name, kind, bits)`, kind one
    /// of `timestamp`, `node`, `sequence`, `clock_id`.
    #[getter]
    fn fields(&self) -> Vec<(String, &'static str, u32)> {
        self.layout
            .fields()
            .iter()
            .map(|f| {
                let kind = match f.kind() {
                    FieldKind::Timestamp => "timestamp",
                    FieldKind::Sequence => "sequence",
                    FieldKind::ClockId => "clock_id",
                    _ => "node",
                };
                (f.name().to_owned(), kind, f.bits())
            })
            .collect()
    }

    /// Reads an ID back.
    fn decode(&self, id: &Bound<'_, PyAny>) -> PyResult<Decoded> {
        decode(&self.layout, id)
    }

    /// An ID from its parts: `timestamp` in ticks since the epoch, or
    /// `unix_ms`; `node_id` or `node_fields`; `sequence`; `clock_id`.
    #[pyo3(signature = (*, timestamp=None, unix_ms=None, node_id=None, node_fields=None,
        sequence=None, clock_id=None))]
    fn compose(
        &self,
        timestamp: Option<&Bound<'_, PyAny>>,
        unix_ms: Option<&Bound<'_, PyAny>>,
        node_id: Option<&Bound<'_, PyAny>>,
        node_fields: Option<&Bound<'_, PyAny>>,
        sequence: Option<&Bound<'_, PyAny>>,
        clock_id: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<u64> {
        let layout = &self.layout;
        let invalid = |m: &str| raise(flakeid_bindings::Error::invalid(m));
        let timestamp = match (
            args::opt_uint(timestamp, "timestamp", u64::MAX)?,
            args::opt_uint(unix_ms, "unix_ms", u64::MAX)?,
        ) {
            (Some(t), None) => t,
            (None, Some(ms)) => layout
                .timestamp_at(ms)
                .map_err(|e| raise(flakeid_bindings::Error::from(e)))?,
            _ => return Err(invalid("give one of timestamp and unix_ms")),
        };
        let node = match (
            args::opt_uint(node_id, "node_id", u64::MAX)?,
            node_fields.filter(|v| !v.is_none()),
        ) {
            (Some(n), None) => n,
            (None, Some(fields)) => {
                let fields = args::fields(fields, "node_fields")?;
                flakeid_bindings::node_id_from_fields(layout, &fields).map_err(raise)?
            }
            (None, None) => 0,
            (Some(_), Some(_)) => return Err(invalid("give node_id or node_fields, not both")),
        };
        let parts = Parts {
            timestamp,
            node,
            sequence: args::opt_uint(sequence, "sequence", u64::MAX)?.unwrap_or(0),
            clock_id: args::opt_uint(clock_id, "clock_id", u64::MAX)?.unwrap_or(0),
        };
        flakeid_bindings::compose(layout, parts).map_err(raise)
    }

    /// The node id of named node fields, every one of the layout's.
    fn node_id_from_fields(&self, fields: &Bound<'_, PyAny>) -> PyResult<u64> {
        let fields = args::fields(fields, "fields")?;
        flakeid_bindings::node_id_from_fields(&self.layout, &fields).map_err(raise)
    }

    fn __repr__(&self) -> String {
        format!("Layout({:?})", self.layout.to_string())
    }

    fn __str__(&self) -> String {
        self.layout.to_string()
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
        BuildHasherDefault::<DefaultHasher>::default().hash_one(&self.layout)
    }
}

pub(crate) fn decode(layout: &flakeid::Layout, id: &Bound<'_, PyAny>) -> PyResult<Decoded> {
    let id = args::uint(id, "id", u64::MAX)?;
    flakeid_bindings::decode(layout, id)
        .map(|decoded| Decoded { decoded })
        .map_err(raise)
}

/// An ID read back through its layout.
#[pyclass(frozen, module = "flakeid_rs")]
pub(crate) struct Decoded {
    decoded: flakeid_bindings::Decoded,
}

#[pymethods]
impl Decoded {
    /// The ID.
    #[getter]
    fn id(&self) -> u64 {
        self.decoded.id
    }

    /// Ticks since the layout's epoch.
    #[getter]
    fn timestamp(&self) -> u64 {
        self.decoded.timestamp
    }

    /// The time, in Unix milliseconds.
    #[getter]
    fn unix_ms(&self) -> u64 {
        self.decoded.unix_ms
    }

    /// The time in RFC 3339, UTC.
    #[getter]
    fn rfc3339(&self) -> &str {
        &self.decoded.rfc3339
    }

    /// The time as an aware `datetime` in UTC.
    #[getter]
    fn datetime<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let datetime = py.import("datetime")?;
        let utc = datetime.getattr("timezone")?.getattr("utc")?;
        let ms = self.decoded.unix_ms;
        let at = datetime
            .getattr("datetime")?
            .call_method1("fromtimestamp", (ms / 1000, &utc))?;
        // Milliseconds added exactly, not through a float.
        let millis = datetime
            .getattr("timedelta")?
            .call1((0, 0, (ms % 1000) * 1000))?;
        at.add(millis)
    }

    /// All node fields as one number.
    #[getter]
    fn node_id(&self) -> u64 {
        self.decoded.node_id
    }

    /// The node fields by name, high to low.
    #[getter]
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        for (name, value) in &self.decoded.fields {
            dict.set_item(name, value)?;
        }
        Ok(dict)
    }

    /// The sequence within the tick.
    #[getter]
    fn sequence(&self) -> u64 {
        self.decoded.sequence
    }

    /// The clock id (0 without a clock-id field).
    #[getter]
    fn clock_id(&self) -> u64 {
        self.decoded.clock_id
    }

    fn __str__(&self) -> &str {
        &self.decoded.text
    }

    fn __repr__(&self) -> String {
        format!("<Decoded {} {}>", self.decoded.id, self.decoded.text)
    }
}

/// `id` in a string form: `decimal` (the default), `hex`, `base32` or
/// `base62`.
#[pyfunction]
#[pyo3(signature = (id, format=None))]
pub(crate) fn encode(id: &Bound<'_, PyAny>, format: Option<&Bound<'_, PyAny>>) -> PyResult<String> {
    let id = args::uint(id, "id", u64::MAX)?;
    let format = match args::opt_string(format, "format")? {
        Some(name) => flakeid_bindings::id_format(&name).map_err(raise)?,
        None => flakeid::IdFormat::Decimal,
    };
    Ok(flakeid_bindings::encode(id, format))
}

/// An ID from a string form: the one named, or (without `format`) the one
/// the string's shape says.
#[pyfunction]
#[pyo3(signature = (text, format=None))]
pub(crate) fn parse_id(
    text: &Bound<'_, PyAny>,
    format: Option<&Bound<'_, PyAny>>,
) -> PyResult<u64> {
    let text = args::string(text, "text")?;
    let format = args::opt_string(format, "format")?
        .map(|name| flakeid_bindings::id_format(&name))
        .transpose()
        .map_err(raise)?;
    flakeid_bindings::parse_id(&text, format)
        .map(|(id, _)| id)
        .map_err(raise)
}

/// A list of `u64`s as Python ints.
pub(crate) fn int_list<'py>(py: Python<'py>, ids: &[u64]) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, ids)
}
