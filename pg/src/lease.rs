//! Leased node ids: the worker holds a node-id lease with the library's
//! keeper (`flakeid::Lease` on PostgreSQL, MySQL/MariaDB, etcd or Redis)
//! and publishes its grant to shared memory; backends issue under it by the
//! library's fence rules.
//!
//! - **Grant.** Node id, the last Unix millisecond the store has recorded
//!   for this holder (backends issue nothing later; they ask the worker to
//!   raise it), and the deadline: the monotonic millisecond until which the
//!   lease is proven valid (the store's TTL less the keeper's safety
//!   margin, counted from before each renewal was sent). Backends compare
//!   the deadline with the clock themselves, so a stalled or killed worker
//!   cannot keep a lapsed lease open.
//! - **Generations.** The grant is published like a seqlock: an odd
//!   generation while it is replaced. A backend reads it (its ticket)
//!   before an ID's compare-and-swap and hands the ID out only if the
//!   generation is unchanged and the deadline not passed after it;
//!   otherwise the ID is dropped, never returned.
//! - **Hand-off.** A fresh claim moves the shared word to the new node id,
//!   after the predecessor's mark (the grant's floor), before the new
//!   generation is published.
//!
//! The worker polls the keeper's grant every 20 ms, so a grant the keeper
//! closes early (it learned the claim was lost) reaches the backends within
//! that; the deadline itself needs no poll.

use std::sync::atomic::{AtomicU64, Ordering, fence};
use std::time::Duration;

use flakeid::{Generator, Id, Lease, MonotonicClock, Parts};
use pgrx::atomics::PgAtomic;
use pgrx::pg_shmem_init;
use pgrx::prelude::*;

use crate::settings::{self, text};
use crate::shared::{WORD, monotonic_ms};

/// The grant's generation: odd while the worker replaces the grant, 0
/// before the first.
static GENERATION: PgAtomic<AtomicU64> = unsafe { PgAtomic::new(c"flakeid.lease_generation") };
static NODE: PgAtomic<AtomicU64> = unsafe { PgAtomic::new(c"flakeid.lease_node") };
/// Monotonic ms until which the grant is proven valid; 0 when fenced.
static UNTIL: PgAtomic<AtomicU64> = unsafe { PgAtomic::new(c"flakeid.lease_until") };
/// The last Unix ms the store has recorded for this holder.
pub(crate) static CEILING_MS: PgAtomic<AtomicU64> =
    unsafe { PgAtomic::new(c"flakeid.lease_ceiling") };
/// The latest Unix ms a backend wanted the ceiling raised past.
pub(crate) static WANTED_MS: PgAtomic<AtomicU64> =
    unsafe { PgAtomic::new(c"flakeid.lease_wanted") };

pub(crate) fn init() {
    pg_shmem_init!(GENERATION);
    pg_shmem_init!(NODE);
    pg_shmem_init!(UNTIL);
    pg_shmem_init!(CEILING_MS);
    pg_shmem_init!(WANTED_MS);
}

/// A ticket: the generation a backend issues under, with its node id.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ticket {
    generation: u64,
    pub(crate) node: u64,
}

/// The current grant's ticket, if it is proven valid now.
pub(crate) fn ticket() -> Option<Ticket> {
    let generation = GENERATION.get().load(Ordering::Acquire);
    if generation == 0 || generation & 1 == 1 {
        return None;
    }
    let node = NODE.get().load(Ordering::Relaxed);
    let until = UNTIL.get().load(Ordering::Relaxed);
    fence(Ordering::Acquire);
    if GENERATION.get().load(Ordering::Relaxed) != generation || past(until) {
        return None;
    }
    Some(Ticket { generation, node })
}

/// After IDs were installed under `ticket`: whether its grant is still the
/// current one and still valid, so the IDs may be handed out.
pub(crate) fn confirm(ticket: Ticket) -> bool {
    fence(Ordering::Acquire);
    let until = UNTIL.get().load(Ordering::Relaxed);
    fence(Ordering::Acquire);
    GENERATION.get().load(Ordering::Relaxed) == ticket.generation && !past(until)
}

/// Whether the deadline `until` (monotonic ms) has passed.
fn past(until: u64) -> bool {
    // Planted bug: backends trust the grant and never look at its deadline,
    // so a server cut off from the store issues on after another server may
    // have claimed its node id.
    if cfg!(feature = "plant-lease-unfenced") {
        return false;
    }
    monotonic_ms() >= until
}

/// The lease `flakeid.node_lease` describes.
fn lease_from_settings() -> Result<Lease, String> {
    let url = text(&settings::NODE_LEASE);
    let url = url.trim();
    let scheme = url.split("://").next().unwrap_or_default();
    let lease = match scheme {
        "postgres" | "postgresql" => Lease::postgres(url),
        "mysql" => Lease::mysql(url),
        "redis" | "rediss" => Lease::redis(url),
        "etcd" => Lease::etcd(
            url["etcd://".len()..]
                .split(',')
                .map(|endpoint| format!("http://{}", endpoint.trim())),
        ),
        _ => {
            return Err(format!(
                "flakeid.node_lease must start with postgres://, postgresql://, mysql://, \
                 redis://, rediss:// or etcd://; it starts with '{scheme}'"
            ));
        }
    };
    let prefix = text(&settings::NODE_LEASE_PREFIX);
    let lease = if prefix.is_empty() {
        lease
    } else {
        lease.prefix(prefix)
    };
    Ok(lease.ttl(Duration::from_millis(
        settings::NODE_LEASE_TTL_MS.get().max(1) as u64,
    )))
}

/// The worker's lease: a library generator that holds it (issuing nothing
/// itself) and what was last published.
pub(crate) struct Holder {
    generator: Generator<MonotonicClock>,
    published: u64,
}

impl Holder {
    /// Claims a node id (the library's keeper, with its own threads, which
    /// are started with every signal blocked so that PostgreSQL's signals
    /// reach only the worker's own thread).
    pub(crate) fn claim() -> Result<Holder, String> {
        let layout = settings::layout().clone();
        let lease = lease_from_settings()?;
        let built = with_signals_blocked(|| Generator::builder(layout).lease(lease).build());
        let generator = built.map_err(|e| format!("no node id could be leased: {e}"))?;
        Ok(Holder {
            generator,
            published: 0,
        })
    }

    /// Publishes the keeper's grant to shared memory, and passes on what
    /// backends wanted of the ceiling.
    pub(crate) fn publish(&mut self) {
        let layout = self.generator.layout();
        let wanted = WANTED_MS.get().load(Ordering::Acquire);
        if wanted > CEILING_MS.get().load(Ordering::Acquire) {
            let tick = layout.timestamp_at(wanted).unwrap_or(0);
            self.generator.want_lease_ceiling(tick);
        }
        // The clock before the grant: the deadline is counted from an
        // instant no later than the one the grant's validity is from.
        let before = monotonic_ms();
        let Some(grant) = self.generator.lease_grant() else {
            UNTIL.get().store(0, Ordering::Release);
            return;
        };
        let until = before + grant.valid_for.as_millis() as u64;
        let ceiling_ms = layout.unix_ms(grant.ceiling + 1).saturating_sub(1);
        if grant.generation == self.published {
            CEILING_MS.get().fetch_max(ceiling_ms, Ordering::AcqRel);
            UNTIL.get().store(until, Ordering::Release);
            return;
        }
        // A fresh claim: close, move the word, publish, open.
        let generation = GENERATION.get();
        let odd = generation.load(Ordering::Acquire) | 1;
        generation.store(odd, Ordering::Release);
        UNTIL.get().store(0, Ordering::Release);
        let floor_state = layout
            .compose(Parts {
                timestamp: grant.floor,
                node: grant.node_id,
                sequence: layout.capacity_per_tick() - 1,
                clock_id: 0,
            })
            .map_or(0, u64::from);
        let word = WORD.get();
        let node_of = |state: u64| {
            layout
                .decode(Id::from_u64(state))
                .map_or(u64::MAX, |d| d.node_id())
        };
        let current = word.load(Ordering::Acquire);
        if current == 0 || node_of(current) != grant.node_id {
            word.store(floor_state, Ordering::Release);
        } else {
            word.fetch_max(floor_state, Ordering::AcqRel);
        }
        NODE.get().store(grant.node_id, Ordering::Relaxed);
        CEILING_MS.get().store(ceiling_ms, Ordering::Relaxed);
        UNTIL.get().store(until, Ordering::Relaxed);
        generation.store(odd + 1, Ordering::Release);
        self.published = grant.generation;
        log!(
            "flakeid: leased node id {} (generation {}), issuing after tick {}",
            grant.node_id,
            odd + 1,
            grant.floor
        );
    }

    /// Leaves the lease to expire in the store instead of releasing it: a
    /// release would record the holder's own last ID as the mark, and this
    /// holder issues none itself (the backends do, up to the ceiling the
    /// store already has). The node id is free again after one TTL.
    pub(crate) fn abandon(self) {
        UNTIL.get().store(0, Ordering::Release);
        std::mem::forget(self.generator);
    }
}

/// Runs `f` with every signal blocked in this thread, so threads it starts
/// inherit a fully blocked mask; restores the mask after.
fn with_signals_blocked<T>(f: impl FnOnce() -> T) -> T {
    // SAFETY: plain libc calls on a sigset_t on the stack.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_BLOCK, &all, &mut old);
        let out = f();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        out
    }
}
