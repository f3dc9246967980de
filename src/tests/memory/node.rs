//! A leased generator on the memory store, stepped by the test: no
//! thread, nothing real-time.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::{MemoryBackend, MemoryStore};
use crate::clock::{Clock, ManualClock};
use crate::error::{BuildError, LeaseError};
use crate::fence::{Fence, Keeper};
use crate::generator::{Builder, Generator};
use crate::layout::Layout;
use crate::lease::Terms;
use crate::lease::keeper::{Run, WallClock};

/// A generator from `builder` behind `fence`, leased by the keeper that
/// `keeper` makes from the generator's lead allowance (a keeper stepped by
/// the test, no thread), as `Builder::build` assembles one whose lease is on
/// etcd or Redis.
pub(crate) fn build_leased<C: Clock>(
    mut builder: Builder<C>,
    fence: &Arc<Fence>,
    keeper: impl FnOnce(Duration) -> Result<Box<dyn Keeper>, BuildError>,
) -> Result<Generator<C>, BuildError> {
    let keeper = keeper(builder.lead())?;
    builder.fence = Some(fence.clone());
    let mut parts = builder.into_parts()?;
    parts.keeper = Some(keeper);
    Ok(Generator::from_parts(parts))
}

/// What a simulated generator's drop told its keeper: `Some(last)` once
/// dropped (see [`Keeper::release`]).
pub(crate) type Last = Arc<Mutex<Option<Option<(u64, u64)>>>>;

/// The generator's side of a [`SimNode`]'s keeper: it only records what the
/// dropped generator ended on.
pub(crate) struct Recorder(pub(crate) Last);

impl Keeper for Recorder {
    fn release(self: Box<Self>, last: Option<(u64, u64)>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(last);
    }
}

/// One leased generator on a [`MemoryBackend`], with no thread: the test
/// moves its clocks and steps its keeper.
///
/// Two clocks belong to the node: its wall clock (a [`ManualClock`], read by
/// the generator and by the keeper for ceilings and usable marks; skew it,
/// step it back) and the fence's monotonic clock (a quanta mock, the lease's
/// deadline; only ever moves forward). The store has a third, its own.
pub(crate) struct SimNode {
    generator: Generator<ManualClock>,
    keeper: Run<MemoryStore>,
    fence: Arc<Fence>,
    mock: Arc<quanta::Mock>,
    clock: ManualClock,
    holder: u64,
    last: Last,
}

impl SimNode {
    /// Builds a generator for `layout` on `clock` (node id chosen by the
    /// lease), leased on `backend` with `terms`, claiming its node id now
    /// (one attempt: no retry, no waiting). The fence clock starts at 0 ns.
    ///
    /// # Errors
    ///
    /// As [`Builder::build`]: `BuildError::Lease` with
    /// [`LeaseError::AllHeld`], [`LeaseError::MarksAhead`] or
    /// [`LeaseError::Unreachable`] (an outage or a fault) among others.
    pub(crate) fn start(
        layout: &Layout,
        clock: ManualClock,
        backend: &MemoryBackend,
        terms: &Terms,
    ) -> Result<SimNode, BuildError> {
        let (source, mock) = quanta::Clock::mock();
        let fence = Arc::new(Fence::with_clock(source));
        let last = Last::default();
        let mut keeper = None;
        let builder = Generator::builder(layout.clone())
            .single_node()
            .clock(clock.clone());
        let generator = build_leased(builder, &fence, |lead| {
            let mut settings = terms.settings(layout, lead, "memory".into())?;
            settings.wall = WallClock::new(clock.clone());
            let store = backend.store(&settings);
            let holder = store.holder();
            let (moved, wall) = (mock.clone(), clock.clone());
            backend.set_clock(holder, move |by| {
                moved.increment(by);
                wall.advance(by);
            });
            let mut run = Run::new(store, settings, fence.clone());
            run.claim_first()?;
            keeper = Some((run, holder));
            Ok(Box::new(Recorder(last.clone())))
        })?;
        let (keeper, holder) = keeper.ok_or_else(|| LeaseError::Config {
            reason: "the keeper was not made".into(),
        })?;
        Ok(SimNode {
            holder,
            generator,
            keeper,
            fence,
            mock,
            clock,
            last,
        })
    }

    /// The generator: issue with `poll_id`/`poll_ids` only. The others
    /// (`try_next_id` included) wait as the policies say, on the real clock,
    /// for a manual clock that only the test moves: they would hang.
    pub(crate) fn generator(&self) -> &Generator<ManualClock> {
        &self.generator
    }

    /// Lets `by` pass on both of the node's clocks.
    pub(crate) fn advance(&self, by: Duration) {
        self.mock.increment(by);
        self.clock.advance(by);
    }

    /// One round of the keeper (see `Run::step`): returns the fence
    /// nanoseconds at which it wants the next; stepping earlier is harmless
    /// (do, after the generator was refused: it may want a higher ceiling or
    /// a rotation).
    pub(crate) fn step(&mut self) -> u64 {
        self.keeper.step()
    }

    /// This node's holder id at the store (for [`MemoryBackend::set_fault`]).
    pub(crate) fn holder(&self) -> u64 {
        self.holder
    }

    /// The node id the keeper holds (its fence may have closed meanwhile).
    pub(crate) fn held_node(&self) -> Option<u64> {
        self.keeper.held_node()
    }

    /// The node id the fence is open for right now (the generator may issue
    /// under it), if any.
    pub(crate) fn open_node(&self) -> Option<u64> {
        let (grant, _) = self.fence.check()?;
        let id = crate::id::Id::from_u64(grant.node_bits);
        self.generator.layout().decode(id).ok().map(|d| d.node_id())
    }

    /// A clean shutdown: drops the generator, then the keeper records the
    /// last timestamp issued and releases the node id (if the store answers).
    pub(crate) fn shutdown(self) {
        let SimNode {
            generator,
            mut keeper,
            last,
            ..
        } = self;
        drop(generator);
        let last = last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .flatten();
        keeper.finish(last);
    }

    /// A crash (SIGKILL): the node vanishes; its node key stays until it
    /// expires, its mark stays at the last ceiling recorded.
    pub(crate) fn crash(self) {
        drop(self);
    }
}
