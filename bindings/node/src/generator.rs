//! `Generator`: a JavaScript handle on a generator of the core crate.
//!
//! Each call that issues IDs runs the core's non-blocking half on the
//! JavaScript thread (the hot path). When that half says the call would
//! wait, a synchronous call waits on this thread only for what is short
//! (the next tick, a clock behind under `wait`, a reservation being saved:
//! the core's [`Wait::Report`]); an `*Async` call waits for anything on a
//! libuv worker thread ([`Wait::Always`]), so the event loop never blocks on
//! a fenced lease or failing storage.
//!
//! # One generator per node id in a process
//!
//! Worker threads load the addon once per process but build their own
//! JavaScript objects, which cannot be passed between threads. Two
//! generators of one layout and one node id would issue the same IDs, so
//! every generator with a static node id (a number, fields, the
//! environment, a host name, single node) is a handle on the process's one
//! core generator of that (layout, node id), kept in [`REGISTRY`]: handles
//! built in any thread share its compare-and-swap, so their IDs are unique
//! and ordered. A second build with other settings is refused. A leased
//! node id is claimed afresh by every build, so leased generators are not
//! shared.
//!
//! Generators of other layouts are not shared, and two of them can issue
//! the same IDs when their bits line up (twitter's node 4 and node 1 of a
//! layout with 8 node bits above a 14-bit sequence both set bit 14 only).
//! A build whose IDs could coincide with those of a generator of another
//! layout in [`REGISTRY`] is refused, naming both and the first ID they
//! share (the library's `Layout::first_shared_id`).

use std::cell::{Ref, RefCell};
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::ptr;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use flakeid_bindings::flakeid::{self, Layout};
use flakeid_bindings::{Blocked, Config, Error, ErrorKind, NodeSource, Wait};
use napi::bindgen_prelude::{
    AsyncTask, BigInt, BigUint64Array, ClassInstance, FromNapiValue, JavaScriptClassExt, Object,
    PromiseRaw, Unknown,
};
use napi::{Env, JsValue, Task, sys};
use napi_derive::napi;

use crate::args::{self, Options};
use crate::errors::{OrRaise, instance, raise};
use crate::layout::{self, Decoded, layout_arg};
use crate::source::{Lease, Persist};

/// A core generator and the JavaScript handles on it.
pub(crate) struct Shared {
    pub(crate) core: flakeid_bindings::Generator,
    /// Open handles (changed only under [`REGISTRY`]'s lock for registered
    /// generators; a leased one has exactly one).
    handles: AtomicUsize,
    /// Its key in [`REGISTRY`], if registered.
    key: Option<Key>,
    /// When it was built: it issues nothing from before.
    built: SystemTime,
}

/// A layout and a node id.
type Key = (Layout, u64);

/// The process's generators with a static node id, by (layout, node id).
/// An entry without persistence stays for the life of the process: a
/// generator built again with the same node id continues its sequence
/// instead of starting the current tick over. One with persistence is
/// closed (its last mark saved, its lock released) when its last handle
/// closes, and a later build resumes from the saved mark.
static REGISTRY: Mutex<Option<HashMap<Key, Arc<Shared>>>> = Mutex::new(None);

fn registry() -> MutexGuard<'static, Option<HashMap<Key, Arc<Shared>>>> {
    // A panic while the lock was held cannot have left the map half
    // changed (each change is one insert or remove).
    REGISTRY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The node id a configuration names without a lease, if it can be read
/// (if not, building reports why).
fn static_node_id(config: &Config) -> Option<u64> {
    let layout = &config.layout;
    match &config.node {
        NodeSource::Id(node) => Some(*node),
        NodeSource::Fields(fields) => flakeid_bindings::node_id_from_fields(layout, fields).ok(),
        NodeSource::Env(var) => flakeid::node_id::from_env(var, layout).ok(),
        NodeSource::StatefulSet => flakeid::node_id::from_statefulset(layout).ok(),
        NodeSource::Hostname(name) => flakeid::node_id::from_hostname(name, layout).ok(),
        NodeSource::Single | NodeSource::Unset => Some(0),
        _ => None,
    }
}

/// Whether two configurations of one (layout, node id) issue alike.
fn same_settings(a: &Config, b: &Config) -> bool {
    let persist = match (&a.persist, &b.persist) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            a.path == b.path
                && a.window == b.window
                && a.restart_rule == b.restart_rule
                && a.replace_issued_until_ms == b.replace_issued_until_ms
        }
        _ => false,
    };
    persist
        && a.on_exhausted == b.on_exhausted
        && a.on_clock_behind == b.on_clock_behind
        && a.random_start == b.random_start
        && a.seed == b.seed
        && a.clock_id == b.clock_id
        && a.counters == b.counters
}

/// Builds the core generator of `config`, or finds the process's one of
/// its layout and node id.
fn open(config: Config) -> Result<Arc<Shared>, Error> {
    let Some(node) = static_node_id(&config) else {
        // A lease: claimed afresh, never shared (and no lock held over the
        // round trip to the store).
        let core = flakeid_bindings::Generator::build(config)?;
        return Ok(Arc::new(Shared {
            core,
            handles: AtomicUsize::new(1),
            key: None,
            built: SystemTime::now(),
        }));
    };
    let mut registry = registry();
    let registry = registry.get_or_insert_with(HashMap::new);
    let key = (config.layout.clone(), node);
    if let Some(shared) = registry.get(&key) {
        if !same_settings(shared.core.config(), &config) {
            return Err(Error::new(
                ErrorKind::NodeId,
                format!(
                    "a generator of this layout with node id {node} already exists in this \
                     process (built in this thread or in another worker thread) with other \
                     settings; generators of one node id in one process share one sequence, \
                     so build them with the same settings, or give each a distinct node id"
                ),
            ));
        }
        shared.handles.fetch_add(1, Ordering::Relaxed);
        return Ok(Arc::clone(shared));
    }
    let built = SystemTime::now();
    refuse_shared_ids(registry, &key, built)?;
    // Built under the lock: two threads building the same node id at once
    // get one generator. Only a lease blocks for long, and it is not here.
    let core = flakeid_bindings::Generator::build(config)?;
    let key = (key.0, core.node_id()?);
    if key.1 != node {
        refuse_shared_ids(registry, &key, built)?;
    }
    let shared = Arc::new(Shared {
        core,
        handles: AtomicUsize::new(1),
        key: Some(key.clone()),
        built,
    });
    match registry.entry(key) {
        Entry::Vacant(slot) => {
            slot.insert(Arc::clone(&shared));
            Ok(shared)
        }
        // The node id read before building differs from the one built
        // (the environment changed meanwhile): the one already there wins.
        Entry::Occupied(slot) => {
            let existing = Arc::clone(slot.get());
            existing.handles.fetch_add(1, Ordering::Relaxed);
            Ok(existing)
        }
    }
}

/// Refuses a generator of `key` built at `built` if it and a generator of
/// another layout in the registry can issue one same ID. Every entry
/// counts, including one whose handles all closed: a later build of its
/// node id continues its sequence, and IDs it issued ahead of the clock
/// may still lie ahead. Both are taken to issue from the older one's build
/// on, which covers every ID either issued or will issue.
fn refuse_shared_ids(
    registry: &HashMap<Key, Arc<Shared>>,
    key: &Key,
    built: SystemTime,
) -> Result<(), Error> {
    let (layout, node) = key;
    for ((other, other_node), shared) in registry {
        if other == layout {
            // One layout: distinct node ids never meet, and one node id is
            // shared.
            continue;
        }
        let from = built.min(shared.built);
        let Some(id) =
            layout.first_shared_id(*node..=*node, other, *other_node..=*other_node, from)
        else {
            continue;
        };
        return Err(Error::new(
            ErrorKind::NodeId,
            format!(
                "a generator of layout `{other}` with node id {other_node} already exists in \
                 this process (built in this thread or in another worker thread), and its IDs \
                 can coincide with those of layout `{layout}` with node id {node}: both can \
                 issue ID {id}; give this generator a node id whose IDs cannot meet that \
                 one's, or build both on one layout"
            ),
        ));
    }
    Ok(())
}

/// Drops a handle on `shared`: if it was the last, and the generator has
/// persistence or a lease, closes it (saves the last mark or releases the
/// lease; blocks).
fn release(shared: Arc<Shared>) {
    let mut registry = registry();
    if shared.handles.fetch_sub(1, Ordering::Relaxed) != 1 {
        return;
    }
    let persisted = shared.core.config().persist.is_some();
    if let (Some(key), Some(map)) = (&shared.key, registry.as_mut()) {
        if !persisted {
            // Stays, for a later build of the same node id to continue.
            return;
        }
        map.remove(key);
    } else {
        drop(registry);
    }
    // SAFETY: no handle is left and none can be made (the registry's lock
    // is held, or the generator was never registered), so no non-blocking
    // call runs on it; async calls in flight are blocking calls, which
    // `finish` waits out.
    unsafe { shared.core.begin_close() }.finish();
}

/// One JavaScript generator object's hold on a core generator, shared
/// with its methods of the hot path (`hot.rs`), which outlive the object
/// if a caller keeps one. Lives on the object's JavaScript thread.
pub(crate) struct Handle {
    /// `None` once closed.
    shared: RefCell<Option<Arc<Shared>>>,
}

impl Handle {
    /// The core generator, unless closed. The borrow ends before any
    /// JavaScript runs (an error's constructor), so `close` never meets it.
    #[inline]
    pub(crate) fn shared(&self) -> Ref<'_, Option<Arc<Shared>>> {
        self.shared.borrow()
    }

    fn close(&self) {
        if let Some(shared) = self.shared.borrow_mut().take() {
            release(shared);
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.close();
    }
}

/// A lock-free Snowflake ID generator. Its hot-path methods are bound to
/// each object by `hot::bind` (`index.js` calls it in the constructor).
#[napi]
pub struct Generator {
    pub(crate) handle: Rc<Handle>,
}

/// The options of `new Generator(layout, options)`.
const OPTIONS: [&str; 15] = [
    "nodeId",
    "nodeFields",
    "nodeIdFromEnv",
    "nodeIdFromStatefulset",
    "nodeIdFromHostname",
    "singleNode",
    "lease",
    "onExhausted",
    "maxAhead",
    "onClockBehind",
    "maxWait",
    "randomStart",
    "seed",
    "clockId",
    "counters",
];

/// The node source from the options, of which at most one may be given.
fn node_source(env: &Env, options: &Options<'_>) -> napi::Result<NodeSource> {
    let mut sources = Vec::new();
    if let Some(node) = args::opt_uint(env, options.get("nodeId"), "nodeId", u64::MAX)? {
        sources.push(("nodeId", NodeSource::Id(node)));
    }
    if let Some(fields) = options.get("nodeFields") {
        let fields = args::fields(env, fields, "nodeFields")?;
        sources.push(("nodeFields", NodeSource::Fields(fields)));
    }
    if let Some(var) = args::opt_string(env, options.get("nodeIdFromEnv"), "nodeIdFromEnv")? {
        sources.push(("nodeIdFromEnv", NodeSource::Env(var)));
    }
    let what = "nodeIdFromStatefulset";
    if args::boolean(env, options.get(what), what)? {
        sources.push((what, NodeSource::StatefulSet));
    }
    let what = "nodeIdFromHostname";
    if let Some(name) = args::opt_string(env, options.get(what), what)? {
        sources.push((what, NodeSource::Hostname(name)));
    }
    if args::boolean(env, options.get("singleNode"), "singleNode")? {
        sources.push(("singleNode", NodeSource::Single));
    }
    if let Some(lease) = options.get("lease") {
        if !Lease::instance_of(env, lease)? {
            return Err(args::wrong_type(
                env,
                "lease",
                "a Lease (Lease.etcd, Lease.redis or Lease.redisSentinel)",
                lease,
            ));
        }
        // SAFETY: `instance_of` checked the class.
        let lease = unsafe { ClassInstance::<Lease>::from_napi_value(env.raw(), lease.raw())? };
        sources.push(("lease", NodeSource::Lease(lease.config.clone())));
    }
    match sources.len() {
        0 => Ok(NodeSource::Unset),
        1 => Ok(sources.remove(0).1),
        _ => {
            let names: Vec<_> = sources.iter().map(|(name, _)| *name).collect();
            Err(raise(
                env,
                Error::invalid(format!(
                    "give one node id source, not {}",
                    names.join(" and ")
                )),
            ))
        }
    }
}

/// The configuration from `new Generator(layout, options)`'s arguments.
fn config(env: &Env, layout: &Unknown<'_>, options: Option<&Unknown<'_>>) -> napi::Result<Config> {
    let mut config = Config::with_layout(layout_arg(env, layout)?);
    let mut known = OPTIONS.to_vec();
    known.push("persist");
    let options = Options::read(env, options, "options", &known)?;
    config.node = node_source(env, &options)?;
    let exhausted = args::opt_string(env, options.get("onExhausted"), "onExhausted")?;
    let max_ahead = args::opt_duration(env, options.get("maxAhead"), "maxAhead")?;
    config.on_exhausted =
        flakeid_bindings::on_exhausted(exhausted.as_deref().unwrap_or("wait"), max_ahead)
            .or_raise(env)?;
    let behind = args::opt_string(env, options.get("onClockBehind"), "onClockBehind")?;
    let max_wait = args::opt_duration(env, options.get("maxWait"), "maxWait")?;
    config.on_clock_behind =
        flakeid_bindings::on_clock_behind(behind.as_deref().unwrap_or("continue"), max_wait)
            .or_raise(env)?;
    config.random_start = args::opt_uint(env, options.get("randomStart"), "randomStart", u64::MAX)?;
    config.seed = args::opt_uint(env, options.get("seed"), "seed", u64::MAX)?;
    config.clock_id =
        args::opt_uint(env, options.get("clockId"), "clockId", u64::MAX)?.unwrap_or(0);
    config.counters = args::boolean(env, options.get("counters"), "counters")?;
    if let Some(persist) = options.get("persist") {
        if !Persist::instance_of(env, persist)? {
            return Err(args::wrong_type(env, "persist", "a Persist", persist));
        }
        // SAFETY: `instance_of` checked the class.
        let persist =
            unsafe { ClassInstance::<Persist>::from_napi_value(env.raw(), persist.raw())? };
        config.persist = Some(persist.config.clone());
    }
    Ok(config)
}

/// A new `BigUint64Array` of `n` IDs, filled by `fill` (which returns how
/// many it wrote, at most `n`).
pub(crate) fn id_array<'env>(
    env: &'env Env,
    n: usize,
    fill: impl FnOnce(&mut [u64]) -> napi::Result<usize>,
) -> napi::Result<Unknown<'env>> {
    let mut data = ptr::null_mut();
    let mut buffer = ptr::null_mut();
    // SAFETY: a fresh ArrayBuffer of `8 * n` bytes (n <= 2^24).
    napi::check_status!(unsafe {
        sys::napi_create_arraybuffer(env.raw(), n * 8, &mut data, &mut buffer)
    })?;
    let written = if n == 0 {
        0
    } else if data.cast::<u64>().is_aligned() {
        // SAFETY: `data` points to the buffer's `8 * n` bytes, aligned for
        // u64 (checked); nothing else refers to them until the typed array
        // below is made.
        let ids = unsafe { std::slice::from_raw_parts_mut(data.cast::<u64>(), n) };
        fill(ids)?
    } else {
        let mut ids = vec![0u64; n];
        let written = fill(&mut ids)?;
        // SAFETY: as above, as bytes, which need no alignment.
        let bytes = unsafe { std::slice::from_raw_parts_mut(data.cast::<u8>(), n * 8) };
        for (chunk, id) in bytes.chunks_exact_mut(8).zip(&ids) {
            chunk.copy_from_slice(&id.to_ne_bytes());
        }
        written
    };
    let mut array = ptr::null_mut();
    // SAFETY: a view of the first `written` IDs of that buffer.
    napi::check_status!(unsafe {
        sys::napi_create_typedarray(
            env.raw(),
            sys::TypedarrayType::biguint64_array,
            written,
            buffer,
            0,
            &mut array,
        )
    })?;
    // SAFETY: a value just made in this environment.
    Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), array) })
}

impl From<Arc<Shared>> for Generator {
    fn from(shared: Arc<Shared>) -> Generator {
        Generator {
            handle: Rc::new(Handle {
                shared: RefCell::new(Some(shared)),
            }),
        }
    }
}

/// `Generator.create`: the arguments read on the JavaScript thread, the
/// generator built (a lease claimed, a state file opened) on a worker
/// thread. A bad argument rejects.
#[napi(js_name = "_open", ts_return_type = "Promise<Generator>")]
pub fn open_async<'env>(
    env: &'env Env,
    layout: Unknown,
    options: Option<Unknown>,
) -> napi::Result<PromiseRaw<'env, Generator>> {
    match config(env, &layout, options.as_ref()) {
        Ok(config) => Ok(env.spawn(Open(Some(config)))?.promise_object()),
        Err(e) => PromiseRaw::reject(env, e),
    }
}

/// A generator built on a worker thread.
pub(crate) struct Open(Option<Config>);

impl Task for Open {
    type Output = Result<Arc<Shared>, Error>;
    type JsValue = Generator;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let config = self.0.take().expect("computed once");
        Ok(open(config))
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<Generator> {
        output.map(Generator::from).or_raise(&env)
    }
}

impl Generator {
    /// The core generator, unless this handle was closed (a clone of the
    /// `Arc`: for the calls off the hot path).
    fn shared(&self, env: &Env) -> napi::Result<Arc<Shared>> {
        match &*self.handle.shared() {
            Some(shared) => Ok(Arc::clone(shared)),
            None => Err(closed(env)),
        }
    }
}

/// One ID on this thread, waiting as `wait` says: the hot path.
#[inline]
pub(crate) fn id(handle: &Handle, wait: Wait) -> Result<u64, Error> {
    let shared = handle.shared();
    let Some(shared) = shared.as_ref() else {
        return Err(closed_error());
    };
    match shared.core.id_now(wait) {
        Ok(id) => Ok(id),
        Err(blocked) => id_waiting(&shared.core, blocked, wait),
    }
}

#[cold]
fn id_waiting(
    core: &flakeid_bindings::Generator,
    blocked: Blocked,
    wait: Wait,
) -> Result<u64, Error> {
    match blocked {
        Blocked::Fail(e) => Err(e),
        Blocked::Wait => core.id_blocking(wait),
    }
}

/// Fills `ids` as `wait` says; returns how many it wrote (all, or under
/// `Never` at least one).
pub(crate) fn fill(handle: &Handle, ids: &mut [u64], wait: Wait) -> Result<usize, Error> {
    let shared = handle.shared();
    let Some(shared) = shared.as_ref() else {
        return Err(closed_error());
    };
    let core = &shared.core;
    let (written, stop) = core.fill_now(ids, wait);
    match stop {
        None => Ok(written),
        Some(Blocked::Fail(e)) => Err(e),
        Some(Blocked::Wait) => Ok(written + core.fill_blocking(&mut ids[written..], wait)?),
    }
}

pub(crate) fn closed_error() -> Error {
    Error::new(ErrorKind::Closed, "the generator is closed")
}

fn closed(env: &Env) -> napi::Error {
    raise(env, closed_error())
}

/// What a generator can do now.
#[napi(object)]
pub struct Health {
    /// `issuing`, `fenced`, `storage_failing`, `expired`, `forked` or
    /// `closed`.
    pub state: String,
    /// True only while issuing: what a readiness probe reports.
    pub ready: bool,
    /// A sentence for logs and probes.
    pub description: String,
    /// `fenced`: milliseconds since the lease lapsed.
    pub closed_for: Option<f64>,
    /// `expired`: the layout's last instant, in Unix milliseconds.
    pub last_ms: Option<f64>,
    /// `storage_failing`: the storage error.
    pub reason: Option<String>,
}

#[napi]
impl Generator {
    /// A generator of `layout` (a preset name, a spec, or a `Layout`),
    /// with one node id source in `options`.
    #[napi(constructor)]
    pub fn new(env: Env, layout: Unknown, options: Option<Unknown>) -> napi::Result<Generator> {
        let config = config(&env, &layout, options.as_ref())?;
        open(config).map(Generator::from).or_raise(&env)
    }

    /// The next ID, waiting for anything on a worker thread.
    #[napi(ts_return_type = "Promise<bigint>")]
    pub fn next_id_async<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, BigInt>> {
        let Some(shared) = self.handle.shared().clone() else {
            return PromiseRaw::reject(env, instance(env, &closed_error())?);
        };
        match shared.core.id_now(Wait::Always) {
            Ok(id) => PromiseRaw::resolve(env, BigInt::from(id)),
            Err(Blocked::Fail(e)) => PromiseRaw::reject(env, instance(env, &e)?),
            Err(Blocked::Wait) => {
                let task = IssueOne(shared);
                Ok(env.spawn(task)?.promise_object())
            }
        }
    }

    /// `n` IDs, waiting for anything on a worker thread.
    #[napi(ts_return_type = "Promise<BigUint64Array>")]
    pub fn next_ids_async<'env>(
        &self,
        env: &'env Env,
        n: Unknown,
    ) -> napi::Result<PromiseRaw<'env, BigUint64Array>> {
        let n = match args::count(env, &n) {
            Ok(n) => n,
            // A bad `n` rejects, as every failure of an async call does.
            Err(e) => return PromiseRaw::reject(env, e),
        };
        let Some(shared) = self.handle.shared().clone() else {
            return PromiseRaw::reject(env, instance(env, &closed_error())?);
        };
        // Issued here when nothing stops it; the rest on a worker thread.
        let mut ids = vec![0; n];
        match shared.core.fill_now(&mut ids, Wait::Always) {
            (_, None) => PromiseRaw::resolve(env, BigUint64Array::new(ids)),
            (_, Some(Blocked::Fail(e))) => PromiseRaw::reject(env, instance(env, &e)?),
            (written, Some(Blocked::Wait)) => {
                let task = IssueMany {
                    shared,
                    ids: Some(ids),
                    written,
                };
                Ok(env.spawn(task)?.promise_object())
            }
        }
    }

    /// What the generator can do now.
    #[napi]
    pub fn health(&self) -> Health {
        let health = match &*self.handle.shared() {
            Some(shared) => shared.core.health(),
            None => flakeid_bindings::Health::Closed,
        };
        let mut out = Health {
            state: health.state().into(),
            ready: health.is_ready(),
            description: health.describe(),
            closed_for: None,
            last_ms: None,
            reason: None,
        };
        match health {
            flakeid_bindings::Health::Fenced { closed_for } => {
                out.closed_for = Some(closed_for.as_secs_f64() * 1e3);
            }
            flakeid_bindings::Health::Expired { last_ms } => out.last_ms = Some(last_ms as f64),
            flakeid_bindings::Health::StorageFailing { reason } => out.reason = Some(reason),
            _ => {}
        }
        out
    }

    /// The node id in the IDs.
    #[napi(getter)]
    pub fn node_id(&self, env: Env) -> napi::Result<u64> {
        self.shared(&env)?.core.node_id().or_raise(&env)
    }

    /// The largest ID issued so far.
    #[napi(getter)]
    pub fn last_id(&self, env: Env) -> napi::Result<u64> {
        self.shared(&env)?.core.last_id().or_raise(&env)
    }

    /// The layout of the IDs.
    #[napi(getter)]
    pub fn layout(&self, env: Env) -> napi::Result<layout::Layout> {
        Ok(layout::Layout {
            layout: self.shared(&env)?.core.layout().clone(),
        })
    }

    /// Free node ids the lease's claims skipped for marks too far ahead.
    #[napi(getter)]
    pub fn lease_skipped_node_ids(&self, env: Env) -> napi::Result<u64> {
        self.shared(&env)?
            .core
            .lease_skipped_node_ids()
            .or_raise(&env)
    }

    /// The counters (bigints), if built with `counters: true`, else null.
    #[napi]
    pub fn stats<'env>(&self, env: &'env Env) -> napi::Result<Option<Object<'env>>> {
        let Some(stats) = self.shared(env)?.core.stats().or_raise(env)? else {
            return Ok(None);
        };
        let mut out = Object::new(env)?;
        out.set("issued", stats.issued)?;
        out.set("waits", stats.waits)?;
        out.set("borrowedTicks", stats.borrowed_ticks)?;
        out.set("clockBehind", stats.clock_behind)?;
        out.set("clockIdBumps", stats.clock_id_bumps)?;
        out.set("lostRaces", stats.lost_races)?;
        Ok(Some(out))
    }

    /// Reads an ID of this generator's layout back.
    #[napi]
    pub fn decode(&self, env: Env, id: Unknown) -> napi::Result<Decoded> {
        layout::decode(&env, self.shared(&env)?.core.layout(), &id)
    }

    /// Closes this handle; later calls throw `ClosedError`. The last handle
    /// of a generator with a lease or persistence releases the lease or
    /// saves the last mark (blocking this thread for a round trip).
    #[napi]
    pub fn close(&self) {
        self.handle.close();
    }

    /// `close`, with the release or save on a worker thread.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn close_async(&self) -> AsyncTask<Close> {
        AsyncTask::new(Close(self.handle.shared.borrow_mut().take()))
    }
}

/// One ID waited for on a worker thread.
pub struct IssueOne(Arc<Shared>);

impl Task for IssueOne {
    type Output = Result<u64, Error>;
    type JsValue = BigInt;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(self.0.core.id_blocking(Wait::Always))
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<BigInt> {
        output.map(BigInt::from).or_raise(&env)
    }
}

/// IDs waited for on a worker thread.
pub struct IssueMany {
    shared: Arc<Shared>,
    /// The IDs, the first `written` issued on the JavaScript thread.
    ids: Option<Vec<u64>>,
    written: usize,
}

impl Task for IssueMany {
    type Output = Result<Vec<u64>, Error>;
    type JsValue = BigUint64Array;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let mut ids = self.ids.take().unwrap_or_default();
        let rest = &mut ids[self.written..];
        Ok(self
            .shared
            .core
            .fill_blocking(rest, Wait::Always)
            .map(|_| ids))
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> napi::Result<BigUint64Array> {
        output.map(BigUint64Array::new).or_raise(&env)
    }
}

/// The last handle's close on a worker thread.
pub struct Close(Option<Arc<Shared>>);

impl Task for Close {
    type Output = ();
    type JsValue = ();

    fn compute(&mut self) -> napi::Result<()> {
        if let Some(shared) = self.0.take() {
            release(shared);
        }
        Ok(())
    }

    fn resolve(&mut self, _env: Env, _output: ()) -> napi::Result<()> {
        Ok(())
    }
}
