//! One simulated machine: its clocks, its generator's profile, and the
//! process (a leased generator and its keeper) running on it.

use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use crate::clock::ManualClock;
use crate::error::{BuildError, LeaseError};
use crate::fence::Fence;
use crate::generator::{Generator, OnClockBehind, OnExhausted};
use crate::lease::Terms;
use crate::lease::keeper::{Ask, Claim, Claimed, Run, Store, WallClock};
use crate::tests::memory::{Fault, Last, MemoryBackend, MemoryStore, Recorder, build_leased};

use super::{Defect, MS, NODE_BITS, Rng, SEQUENCE_BITS, T0_MS, layout, node_of};

/// The store as a keeper sees it, with a planted defect or none.
pub(super) struct SimStore {
    pub(super) inner: MemoryStore,
    pub(super) defect: Defect,
}

impl Store for SimStore {
    fn set_timeout(&mut self, timeout: Duration) {
        self.inner.set_timeout(timeout);
    }

    fn claim(&mut self, ask: &Ask) -> Result<Claimed, LeaseError> {
        let ask = match self.defect {
            Defect::ClaimTakesAnyMark => Ask {
                usable_until_ms: u64::MAX,
                ..*ask
            },
            _ => *ask,
        };
        self.inner.claim(&ask)
    }

    fn renew(&mut self, claim: &Claim, ceiling_ms: u64) -> Result<bool, LeaseError> {
        let renewed = self.inner.renew(claim, ceiling_ms);
        match self.defect {
            Defect::RenewalsNeverFail => Ok(true),
            _ => renewed,
        }
    }

    fn release(&mut self, claim: &Claim, mark_ms: Option<u64>) -> Result<(), LeaseError> {
        self.inner.release(claim, mark_ms)
    }
}

/// One process: a leased generator and its keeper, on the machine's clocks.
pub(super) struct Process {
    pub(super) generator: Generator<ManualClock>,
    pub(super) keeper: Run<SimStore>,
    pub(super) fence: Arc<Fence>,
    pub(super) mock: Arc<quanta::Mock>,
    pub(super) holder: u64,
    pub(super) last: Last,
    /// The fence's clock as last set, in nanoseconds.
    pub(super) mono_ns: u64,
    /// Fence nanoseconds that late answers moved its clock on by
    /// ([`Fault::LateThenCut`]), not yet counted in `mono_ns` ...
    pub(super) late: Arc<AtomicU64>,
    /// ... and not yet matched by true time: the clock stands still until
    /// true time catches up (the answer arrived that much after the step).
    pub(super) ahead_ns: u64,
    /// The ticket of the grant last seen open (0: none yet).
    pub(super) ticket: u64,
    /// The grant last seen open: its serial number among all grants.
    pub(super) grant: u64,
    /// A VM suspension happened while this grant was open.
    pub(super) suspended_in_grant: bool,
    /// The claim (by handle) that waited to open its grant while the VM
    /// was suspended (its wait then ended late, as a deadline would).
    pub(super) suspended_waiting: Option<i64>,
    /// The claim (by handle) waiting to open its grant, and the wall clock
    /// (ms) and true time when it was made.
    pub(super) waiting_wall: Option<(i64, u64, u64)>,
    /// The highest floor of this process's grants so far: a generator
    /// switched to another node id before its clock passed a floor keeps
    /// that timestamp (it never moves back), so it waits for it still.
    pub(super) floor_high: u64,
    /// The IDs issued under the current grant: node id, first, last.
    pub(super) stretch: Option<(u64, u64, u64)>,
}

impl Process {
    /// Starts a process on `wall`: builds its generator and makes the first
    /// claim (one attempt). `link` is set on its connection before that.
    pub(super) fn start(
        profile: &Profile,
        wall: &ManualClock,
        backend: &MemoryBackend,
        ttl: Duration,
        link: Option<Fault>,
        defect: Defect,
    ) -> Result<Process, BuildError> {
        let (source, mock) = quanta::Clock::mock();
        let fence = Arc::new(Fence::with_clock(source));
        let last = Last::default();
        let late = Arc::new(AtomicU64::new(0));
        let terms = Terms {
            ttl,
            node_ids: Some(0..=(1 << NODE_BITS) - 1),
            rotate_after: profile.rotate_after,
            ..Terms::default()
        };
        let layout = layout();
        let mut builder = Generator::builder(layout.clone())
            .single_node()
            .clock(wall.clone())
            .on_clock_behind(profile.on_behind)
            .on_exhausted(profile.on_exhausted);
        if let Some(bound) = profile.random_start {
            builder = builder.random_start(bound).seed(profile.seed);
        }
        let mut made = None;
        let mut holder = 0;
        let generator = build_leased(builder, &fence, |lead| {
            let mut settings = terms.settings(&layout, lead, "memory".into())?;
            settings.wall = WallClock::new(wall.clone());
            settings.plant = defect.plant();
            let inner = backend.store(&settings);
            holder = inner.holder();
            let (moved, counted) = (mock.clone(), late.clone());
            backend.set_clock(holder, move |by| {
                moved.increment(by);
                counted.fetch_add(u64::try_from(by.as_nanos()).unwrap_or(u64::MAX), Relaxed);
            });
            backend.set_fault(holder, link);
            let store = SimStore { inner, defect };
            let mut run = Run::new(store, settings, fence.clone());
            if let Err(e) = run.claim_first() {
                backend.set_fault(holder, None);
                return Err(e.into());
            }
            made = Some(run);
            Ok(Box::new(Recorder(last.clone())))
        })?;
        let keeper = made.ok_or_else(|| LeaseError::Config {
            reason: "the keeper was not made".into(),
        })?;
        Ok(Process {
            generator,
            keeper,
            fence,
            mock,
            holder,
            last,
            mono_ns: 0,
            late,
            ahead_ns: 0,
            ticket: 0,
            grant: 0,
            suspended_in_grant: false,
            suspended_waiting: None,
            waiting_wall: None,
            floor_high: 0,
            stretch: None,
        })
    }

    /// Counts what late answers moved the fence's clock on by since last
    /// asked.
    pub(super) fn count_late(&mut self) {
        let late = self.late.swap(0, Relaxed);
        self.mono_ns += late;
        self.ahead_ns += late;
    }

    /// The node id the fence is open for now.
    pub(super) fn open(&self) -> Option<u64> {
        self.fence
            .check()
            .map(|(grant, _)| node_of(grant.node_bits))
    }

    /// A clean stop: the keeper records the last timestamp issued and
    /// releases the node id (if the store answers).
    pub(super) fn shutdown(self) {
        let Process {
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
}

/// How a machine's generator is configured.
#[derive(Debug, Clone)]
pub(super) struct Profile {
    pub(super) on_behind: OnClockBehind,
    pub(super) on_exhausted: OnExhausted,
    pub(super) random_start: Option<u64>,
    pub(super) seed: u64,
    pub(super) rotate_after: Option<Duration>,
}

impl Profile {
    pub(super) fn draw(rng: &mut Rng) -> Profile {
        Profile {
            on_behind: if rng.one_in(4) {
                OnClockBehind::Error
            } else {
                OnClockBehind::Continue
            },
            on_exhausted: if rng.one_in(5) {
                OnExhausted::Borrow {
                    max_ahead: Duration::from_millis(5),
                }
            } else {
                OnExhausted::Wait
            },
            random_start: rng.one_in(3).then(|| rng.between(1, 1 << SEQUENCE_BITS)),
            seed: rng.next_u64(),
            rotate_after: rng.one_in(2).then(|| Duration::from_secs(1)),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Freeze {
    /// The process stops; its clocks go on (a GC pause, a stop-the-world).
    Pause,
    /// The VM stops, its monotonic clock with it.
    Suspend,
}

/// One machine: a process (or none while it restarts) and its clocks.
pub(super) struct Machine {
    pub(super) process: Option<Process>,
    pub(super) profile: Profile,
    /// The machine's wall clock: the generator's and the keeper's.
    pub(super) wall: ManualClock,
    /// Where NTP keeps it: true time plus this.
    pub(super) boot_skew_ms: i64,
    /// Now: true time plus this.
    pub(super) skew_ms: i64,
    /// The monotonic clock's rate error, in parts per million.
    pub(super) drift_ppm: i64,
    /// True time up to which the clocks were brought.
    pub(super) synced: u64,
    pub(super) frozen: Option<(Freeze, u64)>,
    pub(super) link: Option<(Fault, u64)>,
    /// When a stepped clock is corrected (0: not stepped).
    pub(super) correct_at: u64,
    /// The latest the wall clock read (ms).
    pub(super) wall_high: u64,
    /// Attempts count towards availability from this true time on.
    pub(super) calm_from: u64,
    /// The keeper's wake-up that counts (others are stale).
    pub(super) next_wake: u64,
    /// Since a promotion (true time), and whether the fence was seen
    /// closed since: until it is seen open again.
    pub(super) reopen: Option<(u64, bool)>,
    pub(super) healthy: u64,
    pub(super) issued_healthy: u64,
    /// Healthy attempts refused: see [`REFUSALS`].
    pub(super) refused: [u64; 6],
}

impl Machine {
    pub(super) fn wall_ms(&self, now: u64) -> u64 {
        (T0_MS + now / MS).saturating_add_signed(self.skew_ms)
    }

    pub(super) fn is_up(&self) -> bool {
        self.process.is_some() && self.frozen.is_none()
    }

    /// Brings the machine's clocks to true time `now`: the fence's monotonic
    /// clock at its rate (stopped while the VM is suspended), the wall clock
    /// to true time plus the skew.
    pub(super) fn sync(&mut self, now: u64) {
        let elapsed = now.saturating_sub(self.synced);
        self.synced = now;
        if let Some(p) = &mut self.process
            && self.frozen.map(|(f, _)| f) != Some(Freeze::Suspend)
        {
            p.count_late();
            let drift = i128::from(elapsed) * i128::from(self.drift_ppm) / 1_000_000;
            let by = elapsed.saturating_add_signed(drift as i64);
            // What a late answer moved the clock on by already.
            let skip = by.min(p.ahead_ns);
            p.ahead_ns -= skip;
            p.mock.increment(by - skip);
            p.mono_ns += by - skip;
        }
        if self.frozen.map(|(f, _)| f) != Some(Freeze::Suspend) {
            self.wall.set_ms(self.wall_ms(now));
        }
    }

    /// True time after `now` at which the fence's clock reads `mono_ns`.
    pub(super) fn when_mono(&mut self, now: u64, mono_ns: u64) -> u64 {
        let Some(p) = &mut self.process else {
            return now;
        };
        p.count_late();
        let ahead = match mono_ns.saturating_sub(p.mono_ns) {
            0 => 0,
            // The clock stands still until true time passes what late
            // answers moved it on by.
            ahead => ahead + p.ahead_ns,
        };
        let true_ns = u128::from(ahead) * 1_000_000 / (1_000_000 + self.drift_ppm) as u128;
        now.saturating_add(u64::try_from(true_ns).unwrap_or(u64::MAX))
            .saturating_add(1)
    }
}
