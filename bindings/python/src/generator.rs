//! `Generator` and `Health`. Each call that issues IDs runs the core's
//! non-blocking half with the GIL held (the hot path) and, only when that
//! says the call would wait, its blocking half with the GIL released.

use std::mem::ManuallyDrop;

use flakeid_bindings::{Blocked, Config, NodeSource, Wait};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyMemoryView};

use crate::args;
use crate::errors::raise;
use crate::layout::{self, Layout, layout_arg};
use crate::source::{Lease, Persist};

/// A lock-free Snowflake ID generator, safe to share between threads.
#[pyclass(frozen, weakref, module = "flakeid_rs")]
pub(crate) struct Generator {
    /// Taken out only by `Drop`, which drops it with the GIL released.
    core: ManuallyDrop<flakeid_bindings::Generator>,
}

/// The node source from the keyword arguments, of which at most one may be
/// given.
fn node_source(
    node_id: Option<&Bound<'_, PyAny>>,
    node_fields: Option<&Bound<'_, PyAny>>,
    node_id_from_env: Option<&Bound<'_, PyAny>>,
    node_id_from_statefulset: Option<&Bound<'_, PyAny>>,
    node_id_from_hostname: Option<&Bound<'_, PyAny>>,
    single_node: Option<&Bound<'_, PyAny>>,
    lease: Option<&Bound<'_, PyAny>>,
) -> PyResult<NodeSource> {
    let mut sources = Vec::new();
    if let Some(node) = args::opt_uint(node_id, "node_id", u64::MAX)? {
        sources.push(("node_id", NodeSource::Id(node)));
    }
    if let Some(fields) = node_fields.filter(|v| !v.is_none()) {
        let fields = args::fields(fields, "node_fields")?;
        sources.push(("node_fields", NodeSource::Fields(fields)));
    }
    if let Some(var) = args::opt_string(node_id_from_env, "node_id_from_env")? {
        sources.push(("node_id_from_env", NodeSource::Env(var)));
    }
    if args::boolean(node_id_from_statefulset, "node_id_from_statefulset")? {
        sources.push(("node_id_from_statefulset", NodeSource::StatefulSet));
    }
    if let Some(name) = args::opt_string(node_id_from_hostname, "node_id_from_hostname")? {
        sources.push(("node_id_from_hostname", NodeSource::Hostname(name)));
    }
    if args::boolean(single_node, "single_node")? {
        sources.push(("single_node", NodeSource::Single));
    }
    if let Some(lease) = lease.filter(|v| !v.is_none()) {
        let lease = lease.cast::<Lease>().map_err(|_| {
            raise(flakeid_bindings::Error::new(
                flakeid_bindings::ErrorKind::InvalidType,
                "lease must be a flakeid_rs.Lease (Lease.etcd, Lease.redis or \
                 Lease.redis_sentinel)",
            ))
        })?;
        sources.push(("lease", NodeSource::Lease(lease.get().config.clone())));
    }
    match sources.len() {
        0 => Ok(NodeSource::Unset),
        1 => Ok(sources.remove(0).1),
        _ => {
            let names: Vec<_> = sources.iter().map(|(name, _)| *name).collect();
            Err(raise(flakeid_bindings::Error::invalid(format!(
                "give one node id source, not {}",
                names.join(" and ")
            ))))
        }
    }
}

impl Generator {
    /// One ID: the hot path with the GIL, the wait without it.
    #[inline]
    fn id(&self, py: Python<'_>, wait: Wait) -> PyResult<u64> {
        match self.core.id_now(wait) {
            Ok(id) => Ok(id),
            Err(blocked) => self.id_waiting(py, wait, blocked),
        }
    }

    #[cold]
    fn id_waiting(&self, py: Python<'_>, wait: Wait, blocked: Blocked) -> PyResult<u64> {
        match blocked {
            Blocked::Fail(e) => Err(raise(e)),
            Blocked::Wait => {
                let core = &*self.core;
                py.detach(|| core.id_blocking(wait)).map_err(raise)
            }
        }
    }

    /// Fills `out` as `wait` says; returns how many it wrote (all, or under
    /// `Never` at least one).
    fn fill(&self, py: Python<'_>, out: &mut [u64], wait: Wait) -> PyResult<usize> {
        let (written, stop) = self.core.fill_now(out, wait);
        match stop {
            None => Ok(written),
            Some(Blocked::Fail(e)) => Err(raise(e)),
            Some(Blocked::Wait) => {
                let core = &*self.core;
                let rest = &mut out[written..];
                let more = py
                    .detach(|| core.fill_blocking(rest, wait))
                    .map_err(raise)?;
                Ok(written + more)
            }
        }
    }

    fn ids<'py>(
        &self,
        py: Python<'py>,
        n: &Bound<'py, PyAny>,
        wait: Wait,
    ) -> PyResult<Bound<'py, PyList>> {
        let n = args::count(n, "n")?;
        let mut ids = vec![0u64; n];
        let written = self.fill(py, &mut ids, wait)?;
        layout::int_list(py, &ids[..written])
    }
}

#[pymethods]
impl Generator {
    #[new]
    #[pyo3(signature = (layout, *, node_id=None, node_fields=None, node_id_from_env=None,
        node_id_from_statefulset=None, node_id_from_hostname=None, single_node=None, lease=None,
        on_exhausted=None, max_ahead=None, on_clock_behind=None, max_wait=None,
        random_start=None, seed=None, clock_id=None, counters=None, persist=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        layout: &Bound<'_, PyAny>,
        node_id: Option<&Bound<'_, PyAny>>,
        node_fields: Option<&Bound<'_, PyAny>>,
        node_id_from_env: Option<&Bound<'_, PyAny>>,
        node_id_from_statefulset: Option<&Bound<'_, PyAny>>,
        node_id_from_hostname: Option<&Bound<'_, PyAny>>,
        single_node: Option<&Bound<'_, PyAny>>,
        lease: Option<&Bound<'_, PyAny>>,
        on_exhausted: Option<&Bound<'_, PyAny>>,
        max_ahead: Option<&Bound<'_, PyAny>>,
        on_clock_behind: Option<&Bound<'_, PyAny>>,
        max_wait: Option<&Bound<'_, PyAny>>,
        random_start: Option<&Bound<'_, PyAny>>,
        seed: Option<&Bound<'_, PyAny>>,
        clock_id: Option<&Bound<'_, PyAny>>,
        counters: Option<&Bound<'_, PyAny>>,
        persist: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Generator> {
        let mut config = Config::with_layout(layout_arg(layout)?);
        config.node = node_source(
            node_id,
            node_fields,
            node_id_from_env,
            node_id_from_statefulset,
            node_id_from_hostname,
            single_node,
            lease,
        )?;
        let exhausted = args::opt_string(on_exhausted, "on_exhausted")?;
        let max_ahead = args::opt_duration(max_ahead, "max_ahead")?;
        config.on_exhausted =
            flakeid_bindings::on_exhausted(exhausted.as_deref().unwrap_or("wait"), max_ahead)
                .map_err(raise)?;
        let behind = args::opt_string(on_clock_behind, "on_clock_behind")?;
        let max_wait = args::opt_duration(max_wait, "max_wait")?;
        config.on_clock_behind =
            flakeid_bindings::on_clock_behind(behind.as_deref().unwrap_or("continue"), max_wait)
                .map_err(raise)?;
        config.random_start = args::opt_uint(random_start, "random_start", u64::MAX)?;
        config.seed = args::opt_uint(seed, "seed", u64::MAX)?;
        config.clock_id = args::opt_uint(clock_id, "clock_id", u64::MAX)?.unwrap_or(0);
        config.counters = args::boolean(counters, "counters")?;
        if let Some(persist) = persist.filter(|v| !v.is_none()) {
            let persist = persist.cast::<Persist>().map_err(|_| {
                raise(flakeid_bindings::Error::new(
                    flakeid_bindings::ErrorKind::InvalidType,
                    "persist must be a flakeid_rs.Persist",
                ))
            })?;
            config.persist = Some(persist.get().config.clone());
        }
        // Building claims a lease or opens the state file: without the GIL.
        let core = py
            .detach(|| flakeid_bindings::Generator::build(config))
            .map_err(raise)?;
        Ok(Generator {
            core: ManuallyDrop::new(core),
        })
    }

    /// The next ID, waiting as the policies say.
    fn next_id(&self, py: Python<'_>) -> PyResult<u64> {
        self.id(py, Wait::Always)
    }

    /// The next ID, waiting for the next tick but reporting a fenced lease
    /// or failing storage at once.
    fn try_next_id(&self, py: Python<'_>) -> PyResult<u64> {
        self.id(py, Wait::Report)
    }

    /// The next ID if one can be issued without waiting.
    fn poll_id(&self, py: Python<'_>) -> PyResult<u64> {
        self.id(py, Wait::Never)
    }

    /// `n` consecutive IDs, increasing, as a list.
    fn next_ids<'py>(
        &self,
        py: Python<'py>,
        n: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.ids(py, n, Wait::Always)
    }

    /// `n` consecutive IDs, reporting what `try_next_id` reports.
    fn try_next_ids<'py>(
        &self,
        py: Python<'py>,
        n: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.ids(py, n, Wait::Report)
    }

    /// Up to `n` consecutive IDs that can be issued without waiting (at
    /// least one, for `n` > 0).
    fn poll_ids<'py>(
        &self,
        py: Python<'py>,
        n: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.ids(py, n, Wait::Never)
    }

    /// `n` consecutive IDs as a read-only `memoryview` of format `Q`
    /// (native-endian uint64), filled in place: no int object per ID.
    fn next_ids_buffer<'py>(
        &self,
        py: Python<'py>,
        n: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let n = args::count(n, "n")?;
        let len = n.checked_mul(8).ok_or_else(|| {
            raise(flakeid_bindings::Error::invalid(
                "n is too large for a buffer",
            ))
        })?;
        let bytes = PyBytes::new_with(py, len, |buf: &mut [u8]| {
            // SAFETY: every bit pattern is a valid u64, and `align_to_mut`
            // splits off any unaligned ends.
            let (head, ids, tail) = unsafe { buf.align_to_mut::<u64>() };
            if head.is_empty() && tail.is_empty() {
                self.fill(py, ids, Wait::Always).map(|_| ())
            } else {
                let mut ids = vec![0u64; n];
                self.fill(py, &mut ids, Wait::Always)?;
                for (chunk, id) in buf.chunks_exact_mut(8).zip(ids) {
                    chunk.copy_from_slice(&id.to_ne_bytes());
                }
                Ok(())
            }
        })?;
        PyMemoryView::from(&bytes)?.call_method1("cast", ("Q",))
    }

    /// What the generator can do now, for a readiness probe.
    fn health(&self) -> Health {
        Health {
            health: self.core.health(),
        }
    }

    /// The node id in the IDs: the configured one, or the one the lease
    /// holds now.
    #[getter]
    fn node_id(&self) -> PyResult<u64> {
        self.core.node_id().map_err(raise)
    }

    /// The largest ID issued so far.
    #[getter]
    fn last_id(&self) -> PyResult<u64> {
        self.core.last_id().map_err(raise)
    }

    /// The layout of the IDs.
    #[getter]
    fn layout(&self) -> Layout {
        Layout {
            layout: self.core.layout().clone(),
        }
    }

    /// Free node ids the lease's claims skipped for marks too far ahead.
    #[getter]
    fn lease_skipped_node_ids(&self) -> PyResult<u64> {
        self.core.lease_skipped_node_ids().map_err(raise)
    }

    /// The counters as a dict, if built with `counters=True`, else None.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(stats) = self.core.stats().map_err(raise)? else {
            return Ok(None);
        };
        let dict = PyDict::new(py);
        dict.set_item("issued", stats.issued)?;
        dict.set_item("waits", stats.waits)?;
        dict.set_item("borrowed_ticks", stats.borrowed_ticks)?;
        dict.set_item("clock_behind", stats.clock_behind)?;
        dict.set_item("clock_id_bumps", stats.clock_id_bumps)?;
        dict.set_item("lost_races", stats.lost_races)?;
        Ok(Some(dict))
    }

    /// Reads an ID of this generator's layout back.
    fn decode(&self, id: &Bound<'_, PyAny>) -> PyResult<layout::Decoded> {
        layout::decode(self.core.layout(), id)
    }

    /// Releases a leased node id, or saves the last mark, now; later calls
    /// raise ClosedError. Closing again does nothing.
    fn close(&self, py: Python<'_>) {
        // SAFETY: every non-blocking call of the core is made with the GIL
        // held, as this one is, so none runs meanwhile.
        let closing = unsafe { self.core.begin_close() };
        py.detach(|| closing.finish());
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close(py);
        false
    }

    /// The benchmarks' floor: a call that returns an ID-sized int and does
    /// nothing else.
    fn _floor(&self) -> u64 {
        self.core.floor()
    }

    fn __repr__(&self) -> String {
        format!(
            "Generator({:?}, health={:?})",
            self.core.layout().to_string(),
            self.core.health().state()
        )
    }
}

impl Drop for Generator {
    fn drop(&mut self) {
        // SAFETY: taken once, here; `core` is not used again.
        let core = unsafe { ManuallyDrop::take(&mut self.core) };
        // Releasing a lease or saving the last mark blocks: not with the GIL.
        Python::attach(|py| py.detach(move || drop(core)));
    }
}

/// What a generator can do now.
#[pyclass(frozen, module = "flakeid_rs")]
pub(crate) struct Health {
    health: flakeid_bindings::Health,
}

#[pymethods]
impl Health {
    /// `issuing`, `fenced`, `storage_failing`, `expired`, `forked` or `closed`.
    #[getter]
    fn state(&self) -> &'static str {
        self.health.state()
    }

    /// True only while issuing: what a readiness probe reports.
    #[getter]
    fn ready(&self) -> bool {
        self.health.is_ready()
    }

    /// Seconds the lease has been lapsed (`fenced`), else None.
    #[getter]
    fn closed_for(&self) -> Option<f64> {
        match &self.health {
            flakeid_bindings::Health::Fenced { closed_for } => Some(closed_for.as_secs_f64()),
            _ => None,
        }
    }

    /// The layout's last instant (`expired`), else None.
    #[getter]
    fn last_ms(&self) -> Option<u64> {
        match &self.health {
            flakeid_bindings::Health::Expired { last_ms } => Some(*last_ms),
            _ => None,
        }
    }

    /// The storage error (`storage_failing`), else None.
    #[getter]
    fn reason(&self) -> Option<String> {
        match &self.health {
            flakeid_bindings::Health::StorageFailing { reason } => Some(reason.clone()),
            _ => None,
        }
    }

    fn __str__(&self) -> String {
        self.health.describe()
    }

    fn __repr__(&self) -> String {
        format!("<Health {}>", self.health.describe())
    }
}
