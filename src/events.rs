//! What a generator did that a service may want to log, count or alert on:
//! a clock read behind, a wait, a borrowed tick, a clock-id step, the node-id
//! lease's claims, waits, failures, fences and rotations, the reservation's
//! failed and recovered saves, IDs dropped by a lapsed lease.
//!
//! Set a hook with [`Builder::on_event`](crate::Builder::on_event): any
//! `Fn(&Event) + Send + Sync`, or the ready-made [`Tracing`] (feature
//! `tracing`) and [`Metrics`] (feature `metrics`) hooks. Events are rare and
//! come from slow paths only: a call that takes an ID in the current tick
//! never looks at the hook, and the hook costs the hot path nothing: it sits
//! beside the counters of [`Stats`](crate::Stats), behind the one test of an
//! `Option` that they need anyway.
//!
//! A hook runs on the thread where the event happened: a caller of
//! `next_id` (clock, wait, tick and drop events), the lease's keeper thread
//! (lease events) or the persistence writer (save events). It must be quick
//! and must not call the generator that reports to it. A hook that panics
//! is caught: the event is lost, the generator goes on.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use std::time::Duration;
//! use flakeid::{Event, Generator, Layout, ManualClock, OnClockBehind};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let seen = Arc::new(Mutex::new(Vec::new()));
//! let log = seen.clone();
//! let clock = ManualClock::new(1_700_000_000_000);
//! let generator = Generator::builder(Layout::twitter())
//!     .node_id(1)
//!     .clock(clock.clone())
//!     .on_clock_behind(OnClockBehind::Error)
//!     .on_event(move |event: &Event| log.lock().unwrap().push(event.clone()))
//!     .build()?;
//! generator.next_id();
//! clock.rewind(Duration::from_millis(5)); // someone set the clock back
//! assert!(generator.try_next_id().is_err());
//! assert_eq!(
//!     seen.lock().unwrap()[..],
//!     [Event::ClockBehind { behind: Duration::from_millis(5) }]
//! );
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{LeaseError, StateError};

/// Something a generator did; see the [module docs](self).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// A call read the clock behind the last issued timestamp by `behind`
    /// (more than the lead allowance); what follows is the
    /// [`OnClockBehind`](crate::OnClockBehind) policy's: continue in the
    /// last tick, wait, step the clock id, or report.
    ClockBehind {
        /// How far behind.
        behind: Duration,
    },
    /// A call waited (for the next tick, the clock, a reservation or the
    /// lease) for `waited` in all before it got its IDs or its error.
    Waited {
        /// The whole wait of the call.
        waited: Duration,
    },
    /// A tick was entered ahead of the clock
    /// ([`OnExhausted::Borrow`](crate::OnExhausted::Borrow)).
    TickBorrowed {
        /// How far the tick's start lies ahead of the clock.
        ahead: Duration,
    },
    /// The generator moved to another clock id (a `NextClock` policy).
    ClockIdStepped {
        /// The clock id now in use.
        clock_id: u64,
    },
    /// The lease's first node id was claimed.
    LeaseClaimed {
        /// The node id.
        node_id: u64,
    },
    /// A renewal of the lease failed; the keeper retries until the lease's
    /// deadline.
    LeaseRenewalFailed {
        /// The node id held.
        node_id: u64,
        /// Why.
        error: LeaseError,
    },
    /// The lease could no longer be proven valid (its deadline passed, or
    /// the store says another holder has the node id): nothing is issued
    /// until a fresh claim.
    Fenced {
        /// The node id that was held.
        node_id: u64,
    },
    /// A node id was claimed, but the store cannot prove that the lease of
    /// its previous holder has ended (Redis in the first TTL after a
    /// failover, whose claims may have been lost): the generator issues
    /// under it only after `wait`, the longest that lease can last, and the
    /// keeper keeps the claim alive meanwhile.
    LeaseWaiting {
        /// The node id claimed.
        node_id: u64,
        /// How long from the claim until the generator may issue.
        wait: Duration,
    },
    /// The store acknowledged a claim (`claim`) or a renewal of the node
    /// id's lease, and the generator's deadline under it now counts from
    /// `sent`: it issues under `node_id` only before `sent` plus the TTL
    /// less the safety margin, unless a later acknowledgement moves that.
    /// A renewal counts (and is reported) only if its answer came before
    /// the deadline in force; a claim starts a fresh grant (its generator
    /// may wait before issuing: [`Event::LeaseWaiting`]).
    ///
    /// The instants are the raw facts, read on the keeper thread right
    /// before the request and right after its answer, on the clock
    /// [`Instant`] reads (the fence itself times the deadline on the TSC
    /// where it is reliable, `Instant` otherwise): a checker can compute
    /// each deadline itself without trusting the keeper's arithmetic.
    LeaseExtended {
        /// The node id held.
        node_id: u64,
        /// A claim (`false`: a renewal of the claim held).
        claim: bool,
        /// When the request was sent.
        sent: Instant,
        /// When its answer arrived.
        answered: Instant,
    },
    /// After a fence, a fresh claim reopened the generator.
    LeaseReopened {
        /// The node id claimed (perhaps another than before).
        node_id: u64,
    },
    /// After a long clock rollback the generator moved to a fresh node id
    /// ([`Lease::rotate_after_rollback`](crate::lease)).
    LeaseRotated {
        /// The node id given back.
        from: u64,
        /// The node id now held.
        to: u64,
    },
    /// With restart safety on, a save of the reservation failed; the writer
    /// retries (10 ms, doubling up to 1 s).
    SaveFailed {
        /// Why.
        error: StateError,
    },
    /// A save succeeded after failed ones.
    SaveRecovered,
    /// IDs made under a lease that lapsed before they were handed out were
    /// dropped (never returned): harmless for uniqueness, a gap in the IDs.
    IdsDropped {
        /// How many.
        count: u64,
    },
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::ClockBehind { behind } => write!(f, "clock read {behind:?} behind"),
            Event::Waited { waited } => write!(f, "waited {waited:?}"),
            Event::TickBorrowed { ahead } => write!(f, "borrowed a tick {ahead:?} ahead"),
            Event::ClockIdStepped { clock_id } => write!(f, "moved to clock id {clock_id}"),
            Event::LeaseClaimed { node_id } => write!(f, "leased node id {node_id}"),
            Event::LeaseRenewalFailed { node_id, error } => {
                write!(f, "renewing node id {node_id}'s lease failed: {error}")
            }
            Event::Fenced { node_id } => {
                write!(f, "fenced: node id {node_id}'s lease is not proven valid")
            }
            Event::LeaseWaiting { node_id, wait } => {
                write!(f, "claimed node id {node_id}, issuing after {wait:?}")
            }
            Event::LeaseExtended {
                node_id,
                claim,
                sent,
                answered,
            } => write!(
                f,
                "{} of node id {node_id} acknowledged {:?} after it was sent",
                if *claim { "claim" } else { "renewal" },
                answered.saturating_duration_since(*sent)
            ),
            Event::LeaseReopened { node_id } => write!(f, "reopened with node id {node_id}"),
            Event::LeaseRotated { from, to } => {
                write!(f, "rotated from node id {from} to node id {to}")
            }
            Event::SaveFailed { error } => write!(f, "saving the reservation failed: {error}"),
            Event::SaveRecovered => write!(f, "saving the reservation works again"),
            Event::IdsDropped { count } => {
                write!(f, "dropped {count} IDs made under a lapsed lease")
            }
        }
    }
}

/// Receives a generator's [`Event`]s; set with
/// [`Builder::on_event`](crate::Builder::on_event). Closures
/// `Fn(&Event) + Send + Sync` are hooks.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use flakeid::{Event, EventHook};
///
/// /// Counts the clock's steps back.
/// #[derive(Default)]
/// struct BehindCounter(AtomicU64);
///
/// impl EventHook for BehindCounter {
///     fn on_event(&self, event: &Event) {
///         if let Event::ClockBehind { .. } = event {
///             self.0.fetch_add(1, Ordering::Relaxed);
///         }
///     }
/// }
///
/// let counter = BehindCounter::default();
/// counter.on_event(&Event::SaveRecovered);
/// assert_eq!(counter.0.load(Ordering::Relaxed), 0);
/// ```
pub trait EventHook: Send + Sync + 'static {
    /// Called once per event, on the thread where it happened.
    fn on_event(&self, event: &Event);
}

impl<F: Fn(&Event) + Send + Sync + 'static> EventHook for F {
    fn on_event(&self, event: &Event) {
        self(event);
    }
}

/// A generator's hook, if one is set: what its parts report through.
#[derive(Clone, Default)]
pub(crate) struct Events(Option<Arc<dyn EventHook>>);

impl Events {
    pub(crate) fn new(hook: impl EventHook) -> Events {
        Events(Some(Arc::new(hook)))
    }

    /// Whether a hook is set.
    #[inline]
    pub(crate) fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// Tells the hook, if any; a hook that panics loses the event, nothing
    /// else.
    #[cold]
    pub(crate) fn emit(&self, event: Event) {
        if let Some(hook) = &self.0 {
            let _ = catch_unwind(AssertUnwindSafe(|| hook.on_event(&event)));
        }
    }
}

impl fmt::Debug for Events {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.is_on() { "Some(hook)" } else { "None" })
    }
}

/// A hook that writes each event as a `tracing` event (feature `tracing`),
/// target `flakeid`: warnings for a clock behind, a failed renewal, a fence,
/// a failed save and dropped IDs; info for lease claims, reopenings and
/// rotations and a recovered save; debug for waits, borrowed ticks,
/// clock-id steps and acknowledged claims and renewals.
///
/// ```
/// use flakeid::{Generator, Layout, events::Tracing};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let generator = Generator::builder(Layout::twitter())
///     .node_id(1)
///     .on_event(Tracing)
///     .build()?;
/// # let _ = generator;
/// # Ok(())
/// # }
/// ```
#[cfg(feature = "tracing")]
#[cfg_attr(docsrs, doc(cfg(feature = "tracing")))]
#[derive(Debug, Clone, Copy, Default)]
pub struct Tracing;

#[cfg(feature = "tracing")]
impl EventHook for Tracing {
    fn on_event(&self, event: &Event) {
        use tracing::{debug, info, warn};
        match event {
            Event::ClockBehind { behind } => {
                warn!(target: "flakeid", behind_ms = behind.as_millis() as u64, "{event}");
            }
            Event::Waited { waited } => {
                debug!(target: "flakeid", waited_us = waited.as_micros() as u64, "{event}");
            }
            Event::TickBorrowed { .. } | Event::ClockIdStepped { .. } => {
                debug!(target: "flakeid", "{event}");
            }
            Event::LeaseClaimed { node_id } | Event::LeaseReopened { node_id } => {
                info!(target: "flakeid", node_id, "{event}");
            }
            Event::LeaseWaiting { node_id, wait } => {
                info!(target: "flakeid", node_id, wait_ms = wait.as_millis() as u64, "{event}");
            }
            Event::LeaseExtended { node_id, .. } => debug!(target: "flakeid", node_id, "{event}"),
            Event::LeaseRotated { to, .. } => info!(target: "flakeid", node_id = to, "{event}"),
            Event::LeaseRenewalFailed { node_id, .. } | Event::Fenced { node_id } => {
                warn!(target: "flakeid", node_id, "{event}");
            }
            Event::SaveFailed { .. } | Event::IdsDropped { .. } => {
                warn!(target: "flakeid", "{event}");
            }
            Event::SaveRecovered => info!(target: "flakeid", "{event}"),
        }
    }
}

/// A hook that records events through the `metrics` facade (feature
/// `metrics`), for whichever exporter the service installed:
///
/// | metric | kind | labels |
/// |---|---|---|
/// | `flakeid_events_total` | counter | `event`: `clock_behind`, `waited`, `tick_borrowed`, `clock_id_stepped`, `lease_claimed`, `lease_waiting`, `lease_extended`, `lease_renewal_failed`, `fenced`, `lease_reopened`, `lease_rotated`, `save_failed`, `save_recovered`, `ids_dropped` |
/// | `flakeid_clock_behind_seconds` | histogram | |
/// | `flakeid_wait_seconds` | histogram | |
/// | `flakeid_ids_dropped_total` | counter | |
/// | `flakeid_lease_node_id` | gauge | (the node id held; set at each claim, reopening and rotation) |
///
/// ```
/// use flakeid::{Generator, Layout, events::Metrics};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let generator = Generator::builder(Layout::twitter())
///     .node_id(1)
///     .on_event(Metrics)
///     .build()?;
/// # let _ = generator;
/// # Ok(())
/// # }
/// ```
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
#[derive(Debug, Clone, Copy, Default)]
pub struct Metrics;

#[cfg(feature = "metrics")]
impl EventHook for Metrics {
    fn on_event(&self, event: &Event) {
        let name = match event {
            Event::ClockBehind { behind } => {
                metrics::histogram!("flakeid_clock_behind_seconds").record(behind.as_secs_f64());
                "clock_behind"
            }
            Event::Waited { waited } => {
                metrics::histogram!("flakeid_wait_seconds").record(waited.as_secs_f64());
                "waited"
            }
            Event::TickBorrowed { .. } => "tick_borrowed",
            Event::ClockIdStepped { .. } => "clock_id_stepped",
            Event::LeaseClaimed { node_id } | Event::LeaseReopened { node_id } => {
                metrics::gauge!("flakeid_lease_node_id").set(*node_id as f64);
                if matches!(event, Event::LeaseClaimed { .. }) {
                    "lease_claimed"
                } else {
                    "lease_reopened"
                }
            }
            Event::LeaseWaiting { .. } => "lease_waiting",
            Event::LeaseExtended { .. } => "lease_extended",
            Event::LeaseRenewalFailed { .. } => "lease_renewal_failed",
            Event::Fenced { .. } => "fenced",
            Event::LeaseRotated { to, .. } => {
                metrics::gauge!("flakeid_lease_node_id").set(*to as f64);
                "lease_rotated"
            }
            Event::SaveFailed { .. } => "save_failed",
            Event::SaveRecovered => "save_recovered",
            Event::IdsDropped { count } => {
                metrics::counter!("flakeid_ids_dropped_total").increment(*count);
                "ids_dropped"
            }
        };
        metrics::counter!("flakeid_events_total", "event" => name).increment(1);
    }
}
