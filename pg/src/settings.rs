//! The settings (GUCs), all `flakeid.*`.
//!
//! | setting | default | changed by | meaning |
//! |---|---|---|---|
//! | `flakeid.layout` | `twitter` | restart | a preset (`twitter`, `discord`, `sonyflake`, `js_safe`) or the library's spec text |
//! | `flakeid.node_id` | unset (-1) | restart | this server's node id; no default |
//! | `flakeid.database` | `postgres` | restart | where the worker keeps the reservation (`flakeid.reservation`) |
//! | `flakeid.reserve_ms` | 1000 | reload | how far ahead the worker reserves, in ms |
//!
//! The layout and the node id change only with a restart: every backend
//! shares one generator word, which must not see two layouts or two node
//! ids. A bad value is an error at first use, never a crash.

use std::ffi::CString;
use std::sync::OnceLock;

use flakeid::Layout;
use pgrx::guc::{GucContext, GucFlags, GucRegistry, GucSetting};
use pgrx::prelude::*;

pub static LAYOUT: GucSetting<Option<CString>> =
    GucSetting::<Option<CString>>::new(Some(c"twitter"));
pub static NODE_ID: GucSetting<i32> = GucSetting::<i32>::new(-1);
pub static DATABASE: GucSetting<Option<CString>> =
    GucSetting::<Option<CString>>::new(Some(c"postgres"));
pub static RESERVE_MS: GucSetting<i32> = GucSetting::<i32>::new(1000);
pub static NODE_LEASE: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
pub static NODE_LEASE_PREFIX: GucSetting<Option<CString>> =
    GucSetting::<Option<CString>>::new(None);
pub static NODE_LEASE_TTL_MS: GucSetting<i32> = GucSetting::<i32>::new(10_000);

/// Defines the settings. `preloading`: the postmaster is loading the
/// library (`shared_preload_libraries`), the one moment PostgreSQL lets a
/// setting be restart-only. A backend that loads the library later
/// (`CREATE EXTENSION` without the preload) defines them as reload-only
/// instead: it issues no IDs then, and the decoding functions still read
/// the configured layout.
pub(crate) fn define(preloading: bool) {
    let restart = || {
        if preloading {
            GucContext::Postmaster
        } else {
            GucContext::Sighup
        }
    };
    GucRegistry::define_string_guc(
        c"flakeid.layout",
        c"The layout of flakeid's IDs: a preset name or a layout spec.",
        c"Presets: twitter, discord, sonyflake, js_safe. A spec names the epoch, the \
          fields and their widths, as flakeid's Layout::from_str reads it.",
        &LAYOUT,
        restart(),
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"flakeid.node_id",
        c"This server's node id in flakeid's IDs; -1 (the default) is unset.",
        c"No two servers whose IDs meet may share a node id. Unset, flakeid_next_id() \
          raises an error.",
        &NODE_ID,
        -1,
        i32::MAX,
        restart(),
        GucFlags::default(),
    );
    GucRegistry::define_string_guc(
        c"flakeid.database",
        c"The database in which flakeid's worker keeps its reservation.",
        c"The worker creates the schema flakeid and the sequence flakeid.reservation there.",
        &DATABASE,
        restart(),
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"flakeid.reserve_ms",
        c"How far ahead of the clock flakeid's worker reserves timestamps, in ms.",
        c"A crash forfeits up to this much of the timestamp range; a shorter window \
          commits a reservation more often while IDs are made.",
        &RESERVE_MS,
        10,
        3_600_000,
        GucContext::Sighup,
        GucFlags::UNIT_MS,
    );
    GucRegistry::define_string_guc(
        c"flakeid.node_lease",
        c"Where flakeid's worker leases this server's node id (instead of flakeid.node_id).",
        c"A postgres://, postgresql://, mysql://, redis:// or rediss:// URL, or etcd:// \
          followed by comma-separated host:port endpoints. Empty (the default): no lease.",
        &NODE_LEASE,
        restart(),
        GucFlags::SUPERUSER_ONLY,
    );
    GucRegistry::define_string_guc(
        c"flakeid.node_lease_prefix",
        c"The lease's prefix: servers with the same prefix share a node-id space.",
        c"Empty (the default): the library's default prefix.",
        &NODE_LEASE_PREFIX,
        restart(),
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"flakeid.node_lease_ttl_ms",
        c"How long the lease store keeps the node-id claim without renewal, in ms.",
        c"The worker renews every third of it; cut off from the store, the server stops \
          issuing IDs before it runs out.",
        &NODE_LEASE_TTL_MS,
        1_000,
        3_600_000,
        restart(),
        GucFlags::UNIT_MS,
    );
}

/// A string setting's value; empty when unset.
pub(crate) fn text(setting: &GucSetting<Option<CString>>) -> String {
    setting
        .get()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Whether the node id is leased (`flakeid.node_lease` is set); read once
/// per process, as the setting changes only with a restart.
pub fn leased() -> bool {
    static LEASED: OnceLock<bool> = OnceLock::new();
    *LEASED.get_or_init(|| !text(&NODE_LEASE).trim().is_empty())
}

/// An error with a hint, raised as a PostgreSQL `ERROR`.
pub(crate) fn raise(code: PgSqlErrorCode, message: String, hint: &str) -> ! {
    pgrx::pg_sys::panic::ErrorReport::new(code, message, "pg_flakeid")
        .set_hint(hint)
        .report(PgLogLevel::ERROR);
    unreachable!("an ERROR does not return")
}

/// The layout `flakeid.layout` names, read once per process (it changes
/// only with a restart).
pub fn layout() -> &'static Layout {
    static LAYOUT_READ: OnceLock<Result<Layout, String>> = OnceLock::new();
    let read = LAYOUT_READ.get_or_init(|| {
        let text = text(&LAYOUT);
        text.parse::<Layout>()
            .map_err(|e| format!("flakeid.layout = '{text}' is not a layout: {e}"))
    });
    match read {
        Ok(layout) => layout,
        Err(message) => raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            message.clone(),
            "set flakeid.layout in postgresql.conf to a preset (twitter, discord, sonyflake, \
             js_safe) or a layout spec, and restart the server",
        ),
    }
}

/// Checks where the node id comes from: a lease, or `flakeid.node_id`
/// (set, and within the layout's range), not both.
pub fn check_node_source() {
    if !leased() {
        node_id();
    } else if NODE_ID.get() >= 0 {
        raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!(
                "both flakeid.node_id ({}) and flakeid.node_lease are set: the node id \
                 comes from one or the other",
                NODE_ID.get()
            ),
            "remove one of them from postgresql.conf and restart the server",
        );
    }
}

/// The node id `flakeid.node_id` sets, checked against the layout.
pub fn node_id() -> u64 {
    let node = NODE_ID.get();
    let layout = layout();
    if node < 0 {
        raise(
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            "flakeid.node_id is not set: two servers that both left it out would issue the \
             same IDs"
                .into(),
            &format!(
                "set flakeid.node_id in postgresql.conf to this server's node id (0 to {}), \
                 unique among the servers whose IDs meet, or lease one with \
                 flakeid.node_lease, and restart the server",
                layout.max_node_id()
            ),
        );
    }
    let node = node as u64;
    if node > layout.max_node_id() {
        raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!(
                "flakeid.node_id = {node} does not fit the layout, whose node ids run from 0 \
                 to {}",
                layout.max_node_id()
            ),
            "set flakeid.node_id to a node id the layout can hold, and restart the server",
        );
    }
    node
}
