//! The compiled configuration of a generator and its state transition.
//!
//! Both generators keep their state as one `u64`: the last ID handed out (see
//! [`Plan::advance`]), and both move it with the same
//! function: the lock-free one by compare-and-swap, the mutex one under its
//! lock. So they share semantics by construction, and the differential tests
//! compare the two ways of applying it.
//!
//! # The transitions
//!
//! An attempt holds the state word (timestamp `ts`, sequence, node id and
//! clock id in their ID positions) and a clock reading whose tick is `r`;
//! `lead` is the `Borrow` allowance in ticks (0 under other policies), and
//! the tick has *room* while its sequence is below the maximum. A leased
//! generator first passes the fence ([`Plan::gate`]); the first row that
//! matches decides:
//!
//! | lease | clock vs. state | room | step, or stall |
//! |---|---|---|---|
//! | closed or expired | any | any | stall `Fenced` |
//! | grants another node id, or `ts` at or below its floor | any | any | *switch*: install the grant's node id at `max(ts, floor)` (a rotation: at the floor) with that tick used up; issues nothing; read the clock again |
//! | none, or valid | `r > ts`, past the layout's end | any | stall `Expired` |
//! | none, or valid | `r > ts` | any | enter tick `r` at the start value, if the reservation and the lease's ceiling cover it; else stall `Unreserved` (the writer or keeper is asked for it) |
//! | none, or valid | `ts - lead <= r <= ts` | yes | the next sequence values of `ts` (the fast path, when `r == ts` and there is no lease) |
//! | none, or valid | `ts - lead <= r <= ts` | no | [`OnExhausted`]: `Wait` and `Error`, stall `Exhausted` (retry when the clock reaches `ts + 1 - lead`); `Borrow`, enter `ts + 1` if at most `r + lead`; `NextClock`, enter `ts` on the next clock id free in it (else stall) |
//! | none, or valid | `r < ts - lead` | any | [`OnClockBehind`]: `Continue`, as the two rows above; `Wait` and `Error`, stall `Behind`; `NextClock`, enter tick `r` on the next free clock id (else continue) |
//!
//! After the install, a leased attempt confirms its ticket: IDs made under a
//! grant that lapsed or was replaced meanwhile are dropped, and the attempt
//! starts over. A stall computed from a reading older than the state word
//! is never reported: the attempt reads the clock again first (the fast
//! path's reading is the clock's cached one, used only to continue a tick).

use std::sync::Arc;
use std::time::Duration;

use super::policy::{OnClockBehind, OnExhausted};
use crate::error::GenerateError;
use crate::fence::Fence;
use crate::layout::Layout;
#[cfg(test)]
use crate::layout::mask;
use crate::persist::Reservation;

/// A successful transition: the new state and the IDs it hands out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Step {
    /// The state to store.
    pub(crate) next: u64,
    /// The first ID handed out.
    pub(crate) first: u64,
    /// How many consecutive sequence values, from `first`, are handed out.
    pub(crate) count: u64,
    pub(crate) kind: StepKind,
    /// Whether the step entered a tick (or clock id) rather than continuing one.
    pub(crate) entered: bool,
}

/// What kind of transition a step was: plain, or something worth counting
/// and telling the event hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StepKind {
    Plain,
    /// Moved to a tick ahead of the clock.
    Borrowed,
    /// Issued while the clock read behind.
    Behind,
    /// Moved to a new clock id (exhaustion or clock behind).
    Bumped {
        behind: bool,
    },
}

/// What the lease's fence says before a compare-and-swap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Go ahead; confirm the ticket after the compare-and-swap.
    Pass(u64),
    /// Install this state first (the lease's node id and floor), then retry.
    Switch(u64),
}

/// Why no transition is possible right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stall {
    /// The tick is used up; the clock must advance about `retry_ms`.
    Exhausted { retry_ms: u64 },
    /// The clock reads `behind_ms` before the last timestamp and the policy
    /// says not to continue.
    Behind { behind_ms: u64 },
    /// The clock is past what the timestamp field can hold.
    Expired,
    /// Entering `tick` on `clock` needs a reservation not yet saved (restart
    /// safety's mark, or the ceiling a lease's store records).
    Unreserved { clock: u64, tick: u64 },
    /// The node-id lease cannot be proven valid.
    Fenced,
}

pub(crate) struct Plan {
    pub(crate) layout: Layout,
    epoch_ms: u64,
    unit_ms: u64,
    ts_shift: u32,
    ts_max: u64,
    seq_shift: u32,
    seq_max: u64,
    seq_one: u64,
    /// The sequence field's bits in place, all of which set mean the tick is
    /// used up; 0 with a lease, so the short path never applies then
    /// ([`Plan::advance_in_tick`]).
    short_full: u64,
    /// Mask of the clock-id bits in place (0 without a clock-id field).
    clk_mask: u64,
    clk_shift: u32,
    /// Mask of all node bits in place.
    node_mask: u64,
    /// The configured node id's bits in place.
    node_bits: u64,
    pub(crate) node_id: u64,
    pub(crate) on_exhausted: OnExhausted,
    pub(crate) on_behind: OnClockBehind,
    /// Ticks the timestamp may lead the clock (the `Borrow` allowance).
    lead_ticks: u64,
    /// Sequence start bound: 0 means every tick starts at 0.
    start_bound: u64,
    seed: u64,
    /// The clock id this generator started with; it never comes back to it.
    first_clock_id: u64,
    /// The saved reservation, when restart safety is on.
    reservation: Option<Arc<Reservation>>,
    /// The node-id lease's fence, when the node id is leased.
    fence: Option<Arc<Fence>>,
}

pub(crate) struct PlanConfig {
    pub(crate) node_bits: u64,
    pub(crate) node_id: u64,
    pub(crate) on_exhausted: OnExhausted,
    pub(crate) on_behind: OnClockBehind,
    pub(crate) start_bound: u64,
    pub(crate) seed: u64,
    pub(crate) first_clock_id: u64,
    pub(crate) reservation: Option<Arc<Reservation>>,
    pub(crate) fence: Option<Arc<Fence>>,
}

impl Plan {
    /// Compiles a configuration the builder has already validated.
    pub(crate) fn new(layout: Layout, config: PlanConfig) -> Plan {
        let ts = layout.timestamp_field().clone();
        let seq = layout.sequence_field().clone();
        let (clk_mask, clk_shift) = layout
            .clock_id_field()
            .map_or((0, 0), |f| (f.max() << f.shift(), f.shift()));
        let unit_ms = layout.unit_ms();
        let lead_ticks =
            u64::try_from(config.on_exhausted.lead().as_millis()).unwrap_or(u64::MAX) / unit_ms;
        Plan {
            epoch_ms: layout.epoch_ms(),
            unit_ms,
            ts_shift: ts.shift(),
            ts_max: ts.max(),
            seq_shift: seq.shift(),
            seq_max: seq.max(),
            short_full: if config.fence.is_some() {
                0
            } else {
                seq.max() << seq.shift()
            },
            seq_one: 1 << seq.shift(),
            clk_mask,
            clk_shift,
            node_mask: layout.node_mask_bits(layout.max_node_id()).unwrap_or(0),
            node_bits: config.node_bits,
            node_id: config.node_id,
            on_exhausted: config.on_exhausted,
            on_behind: config.on_behind,
            lead_ticks,
            start_bound: config.start_bound,
            seed: config.seed,
            first_clock_id: config.first_clock_id,
            reservation: config.reservation,
            fence: config.fence,
            layout,
        }
    }

    /// The state before any ID: timestamp 0 with sequence 0 taken, so the
    /// first ID is never the all-zero one and no tick is skipped.
    /// The bits of the state that hold the node id.
    pub(crate) fn node_mask(&self) -> u64 {
        self.node_mask
    }

    pub(crate) fn initial_state(&self) -> u64 {
        (self.first_clock_id << self.clk_shift) | self.node_bits
    }

    /// The state after a predecessor that may have used every sequence value
    /// up to and including `tick` on the first clock id.
    pub(crate) fn state_after(&self, tick: u64) -> u64 {
        (tick.min(self.ts_max) << self.ts_shift)
            | (self.first_clock_id << self.clk_shift)
            | self.node_bits
            | (self.seq_max << self.seq_shift)
    }

    /// The bits a new tick keeps from the state: node id and clock id.
    #[inline]
    fn kept_mask(&self) -> u64 {
        self.node_mask | self.clk_mask
    }

    /// The clock id in a state, as a number.
    #[inline]
    pub(crate) fn clock_of(&self, state: u64) -> u64 {
        (state & self.clk_mask) >> self.clk_shift
    }

    /// Bookkeeping after a step was installed.
    #[inline]
    pub(crate) fn installed(&self, step: &Step) {
        if let (true, Some(r)) = (step.entered, &self.reservation) {
            r.entered(self.clock_of(step.first), self.ts_of(step.first));
        }
    }

    pub(crate) fn reservation(&self) -> Option<&Reservation> {
        self.reservation.as_deref()
    }

    /// With a leased node id: `Err(Fenced)` unless the lease is proven valid
    /// now; `Switch(state)` if `cur` must first be moved under the grant (it
    /// carries another node id, or a timestamp not after the previous holder's
    /// floor), which the caller installs before issuing; otherwise `Pass` with
    /// the ticket to [`confirm`](Plan::confirm) after the compare-and-swap.
    ///
    /// The switched state is the grant's node id with the floor's tick used
    /// up: the timestamp raised to the floor, or set to it for a rewinding
    /// grant to a new node id.
    #[inline]
    pub(crate) fn gate(&self, cur: u64) -> Result<Gate, Stall> {
        let Some(fence) = &self.fence else {
            return Ok(Gate::Pass(0));
        };
        let (grant, ticket) = fence.check().ok_or(Stall::Fenced)?;
        let floor = grant.floor.min(self.ts_max);
        let ts = self.ts_of(cur);
        let ts = if cur & self.node_mask == grant.node_bits {
            // The same node id, maybe claimed again after someone else held
            // it: nothing at or below their floor.
            if ts > floor || (ts == floor && self.seq_of(cur) == self.seq_max) {
                return Ok(Gate::Pass(ticket));
            }
            floor
        } else if grant.rewind {
            floor
        } else {
            let ts = ts.max(floor);
            fence.switched_at(ts);
            ts
        };
        Ok(Gate::Switch(
            (ts << self.ts_shift)
                | (cur & self.clk_mask)
                | grant.node_bits
                | (self.seq_max << self.seq_shift),
        ))
    }

    /// Whether the IDs of a compare-and-swap made after [`gate`](Plan::gate)
    /// returned `Pass(ticket)` may be handed out: always without a lease;
    /// with one, only if the same grant is still valid. Unconfirmed IDs are
    /// dropped.
    #[inline]
    pub(crate) fn confirm(&self, ticket: u64) -> bool {
        match &self.fence {
            None => true,
            Some(fence) => fence.confirm(ticket),
        }
    }

    /// The node id bits of `state` and the highest timestamp field issued
    /// under them, for a lease's mark; `None` when only an upper bound is
    /// known. The state's timestamp is that highest one unless an
    /// `OnClockBehind::NextClock` step moved it back, which leaves the state
    /// on a clock id other than the first (clock ids never come back).
    pub(crate) fn last_issued(&self, state: u64) -> Option<(u64, u64)> {
        let moved_back = self.on_behind == OnClockBehind::NextClock
            && self.clock_of(state) != self.first_clock_id;
        (!moved_back).then(|| (state & self.node_mask, self.ts_of(state)))
    }

    /// The lease's fence, if the node id is leased.
    #[cfg(any(
        feature = "etcd",
        feature = "redis",
        feature = "postgres",
        feature = "mysql"
    ))]
    pub(crate) fn fence(&self) -> Option<&Fence> {
        self.fence.as_deref()
    }

    /// The node id bits of the lease's latest claim, its fence open or not,
    /// if the node id is leased.
    pub(crate) fn leased_node_bits(&self) -> Option<u64> {
        self.fence.as_ref().and_then(|f| f.claimed_node_bits())
    }

    /// The distance between consecutive IDs of one tick.
    #[inline]
    pub(crate) fn seq_one(&self) -> u64 {
        self.seq_one
    }

    /// Clock reading (Unix ms) to ticks since the epoch; before it reads as 0.
    #[inline]
    pub(crate) fn ticks(&self, unix_ms: u64) -> u64 {
        let since = unix_ms.saturating_sub(self.epoch_ms);
        if self.unit_ms == 1 {
            since
        } else {
            self.in_units(since)
        }
    }

    /// Out of line: a division is longer than the rest of the fast path,
    /// which millisecond layouts never take.
    #[inline(never)]
    fn in_units(&self, ms: u64) -> u64 {
        ms / self.unit_ms
    }

    /// The timestamp field of a state.
    #[inline]
    pub(crate) fn ts_of(&self, state: u64) -> u64 {
        state >> self.ts_shift
    }

    #[inline]
    fn seq_of(&self, state: u64) -> u64 {
        (state >> self.seq_shift) & self.seq_max
    }

    #[inline]
    fn unix_ms(&self, ticks: u64) -> u64 {
        self.epoch_ms
            .saturating_add(ticks.saturating_mul(self.unit_ms))
    }

    /// The sequence value a new tick starts at.
    #[inline]
    fn start(&self, ts: u64, clk_bits: u64) -> u64 {
        if self.start_bound == 0 {
            return 0;
        }
        let x = splitmix64(self.seed ^ ts.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ clk_bits);
        ((u128::from(x) * u128::from(self.start_bound)) >> 64) as u64
    }

    /// A state at timestamp `ts` keeping `kept` (node and clock-id bits in
    /// place), with its IDs, if the reservation (when there is one) covers it.
    #[inline]
    fn enter_tick(&self, ts: u64, kept: u64, n: u64, kind: StepKind) -> Result<Step, Stall> {
        let clk_bits = kept & self.clk_mask;
        if let Some(r) = &self.reservation {
            let clock = clk_bits >> self.clk_shift;
            if !r.covers(clock, ts) {
                return Err(Stall::Unreserved { clock, tick: ts });
            }
        }
        if let Some(fence) = &self.fence {
            // The lease's store has not yet recorded that this holder may
            // reach `ts` (the next holder of the node id starts after what it
            // records): ask the keeper, and wait like for a reservation.
            if ts > fence.ceiling() {
                fence.want(ts);
                return Err(Stall::Unreserved {
                    clock: clk_bits >> self.clk_shift,
                    tick: ts,
                });
            }
        }
        let start = self.start(ts, clk_bits);
        let first = (ts << self.ts_shift) | kept | (start << self.seq_shift);
        let count = n.min(self.seq_max - start + 1);
        Ok(Step {
            next: first + (count - 1) * self.seq_one,
            first,
            count,
            kind,
            entered: true,
        })
    }

    /// The bits of the first clock id after `clk_bits` that this generator
    /// has not used and no predecessor may have used at tick `ts`, if any.
    ///
    /// Clock ids are taken in order from the first one, so those from the
    /// first to the current are used (reusing one could repeat an ID), and
    /// the search ends where it would come back to the first. It skips clock
    /// ids whose saved mark is at or past `ts` (they are never used later
    /// either: taken in order, skipped ones stay behind), and looks at none
    /// in a tick up to a leased node id's floor, which covers every clock id.
    /// `wrap`: whether it may go past the highest clock id to the lowest.
    #[inline]
    fn next_clock(&self, clk_bits: u64, ts: u64, wrap: bool) -> Option<u64> {
        if self.clk_mask == 0 {
            return None;
        }
        if let Some(fence) = &self.fence
            && ts <= fence.floor()
        {
            return None;
        }
        let one = 1 << self.clk_shift;
        let first = self.first_clock_id << self.clk_shift;
        let mut next = clk_bits;
        loop {
            next = (next + one) & self.clk_mask;
            if next == first || (!wrap && next < clk_bits) {
                return None;
            }
            match &self.reservation {
                Some(r) if !r.is_fresh(next >> self.clk_shift, ts) => {}
                _ => return Some(next),
            }
        }
    }

    /// [`advance`](Plan::advance) in the case that matters under load, or
    /// `None`: no lease, the clock reads the state's tick, and the tick has
    /// room. Wherever this returns a step, `advance` returns the same one.
    ///
    /// The generators try it first so that the frequent call stays a few
    /// instructions long and inlines; new ticks, policies and the lease gate
    /// go through `advance`, out of line. With a lease it never applies:
    /// every attempt passes the fence.
    #[inline]
    pub(crate) fn advance_in_tick(&self, cur: u64, now_ms: u64, n: u64) -> Option<Step> {
        // `ticks(now_ms) == ts_of(cur)` without a division: the reading lies
        // within the state's tick, which starts at `start` (computed from the
        // state, not the reading, which arrives later). The layout keeps
        // every tick's start below u64::MAX, so nothing wraps but a reading
        // before the start, to far past the tick.
        let in_tick = if self.unit_ms == 1 {
            now_ms == self.ts_of(cur) + self.epoch_ms
        } else {
            let start = self.ts_of(cur) * self.unit_ms + self.epoch_ms;
            now_ms.wrapping_sub(start) < self.unit_ms
        };
        if !in_tick || cur & self.short_full == self.short_full {
            return None;
        }
        Some(self.in_tick(cur, self.seq_of(cur), n, StepKind::Plain))
    }

    /// The next `n` (at most what is left) IDs of `cur`'s tick, whose
    /// sequence `seq` has room.
    #[inline(always)]
    fn in_tick(&self, cur: u64, seq: u64, n: u64, kind: StepKind) -> Step {
        // Spelled out for one ID, so `next_id` needs no sequence arithmetic.
        let count = if n == 1 { 1 } else { n.min(self.seq_max - seq) };
        Step {
            next: cur + count * self.seq_one,
            first: cur + self.seq_one,
            count,
            kind,
            entered: false,
        }
    }

    /// The transition for a request of `n >= 1` IDs, from state `cur` at clock
    /// reading `now_ms`.
    ///
    /// The state is the last ID handed out: timestamp, node id, sequence and
    /// clock id in their layout positions. The next ID in the same tick is
    /// `cur + seq_one`, and a tick is used up when the sequence field is all
    /// ones. Keeping the node id in the word lets a lease switch node ids with
    /// one compare-and-swap.
    ///
    /// - Clock past the timestamp: start a new tick at the clock's time.
    /// - Clock at or a little behind (within the lead allowance): next
    ///   sequence value of the same tick. A reading below the stored timestamp
    ///   is the same tick: the state, not the clock, orders IDs.
    /// - Further behind: the [`OnClockBehind`] policy.
    /// - Sequence used up: the [`OnExhausted`] policy.
    #[inline]
    pub(crate) fn advance(&self, cur: u64, now_ms: u64, n: u64) -> Result<Step, Stall> {
        debug_assert!(n >= 1);
        let now = self.ticks(now_ms);
        let ts = self.ts_of(cur);
        if now > ts {
            if now > self.ts_max {
                return Err(Stall::Expired);
            }
            return self.enter_tick(now, cur & self.kept_mask(), n, StepKind::Plain);
        }
        if now.saturating_add(self.lead_ticks) < ts {
            return self.behind(cur, ts, now_ms, n);
        }
        self.same_tick(cur, ts, now_ms, n, StepKind::Plain)
    }

    #[inline]
    fn same_tick(
        &self,
        cur: u64,
        ts: u64,
        now_ms: u64,
        n: u64,
        kind: StepKind,
    ) -> Result<Step, Stall> {
        let seq = self.seq_of(cur);
        if seq < self.seq_max {
            return Ok(self.in_tick(cur, seq, n, kind));
        }
        self.exhausted(cur, ts, now_ms, n)
    }

    #[cold]
    #[inline(never)]
    fn exhausted(&self, cur: u64, ts: u64, now_ms: u64, n: u64) -> Result<Step, Stall> {
        match self.on_exhausted {
            OnExhausted::Borrow { .. }
                if ts < self.ts_max && ts < self.ticks(now_ms).saturating_add(self.lead_ticks) =>
            {
                return self.enter_tick(ts + 1, cur & self.kept_mask(), n, StepKind::Borrowed);
            }
            OnExhausted::NextClock => {
                // Only upwards, and not in a tick where the state moved to
                // another node id: a lower clock id, or a lower node id with
                // a fresh clock id, in the same tick would issue a smaller ID.
                let clk_bits = cur & self.clk_mask;
                let switched = self.fence.as_ref().is_some_and(|f| ts <= f.switched());
                if !switched && let Some(next) = self.next_clock(clk_bits, ts, false) {
                    let kept = (cur & self.node_mask) | next;
                    return self.enter_tick(ts, kept, n, StepKind::Bumped { behind: false });
                }
            }
            _ => {}
        }
        // The clock must reach the tick after `ts`, less what may be
        // borrowed. After the layout's last tick there is none: the clock
        // passing the end expires the generator ([`Plan::advance`]), and not
        // before, even when the state reached the last tick ahead of the
        // clock (borrowed, or a restart's saved mark).
        let target = if ts >= self.ts_max {
            self.unix_ms(self.ts_max.saturating_add(1))
        } else {
            self.unix_ms((ts + 1).saturating_sub(self.lead_ticks))
        };
        Err(Stall::Exhausted {
            retry_ms: target.saturating_sub(now_ms).max(1),
        })
    }

    /// How far (in ms, at least 1) a reading of `now_ms` lies behind the
    /// start of the tick of state `cur`.
    pub(crate) fn behind_ms(&self, cur: u64, now_ms: u64) -> u64 {
        self.unix_ms(self.ts_of(cur)).saturating_sub(now_ms).max(1)
    }

    #[cold]
    #[inline(never)]
    fn behind(&self, cur: u64, ts: u64, now_ms: u64, n: u64) -> Result<Step, Stall> {
        if let Some(fence) = &self.fence {
            // The rotation policy of a leased node id: after a long enough
            // rollback, the keeper moves to a node id fresh at this time. A
            // lead up to the `Borrow` allowance is not a rollback.
            let now = self.ticks(now_ms);
            fence.behind(cur & self.node_mask, now, ts - now - self.lead_ticks);
        }
        match self.on_behind {
            OnClockBehind::Wait { .. } | OnClockBehind::Error => Err(Stall::Behind {
                behind_ms: self.behind_ms(cur, now_ms),
            }),
            OnClockBehind::NextClock => {
                let now = self.ticks(now_ms);
                match self.next_clock(cur & self.clk_mask, now, true) {
                    Some(next) => {
                        let kept = (cur & self.node_mask) | next;
                        self.enter_tick(now, kept, n, StepKind::Bumped { behind: true })
                    }
                    None => self.same_tick(cur, ts, now_ms, n, StepKind::Behind),
                }
            }
            OnClockBehind::Continue => self.same_tick(cur, ts, now_ms, n, StepKind::Behind),
        }
    }

    /// The error a caller sees for a stall the policy does not wait through.
    pub(crate) fn error(&self, stall: Stall) -> GenerateError {
        match stall {
            Stall::Exhausted { retry_ms } => GenerateError::SequenceExhausted {
                retry_after: Duration::from_millis(retry_ms),
            },
            Stall::Behind { behind_ms } => GenerateError::ClockBehind {
                behind: Duration::from_millis(behind_ms),
            },
            Stall::Expired => GenerateError::Expired {
                last_ms: self.layout.last_ms(),
            },
            Stall::Unreserved { .. } => match self.reservation().and_then(Reservation::failure) {
                Some(e) => GenerateError::Storage(e),
                None => GenerateError::Reserving,
            },
            Stall::Fenced => GenerateError::Fenced,
        }
    }
}

/// Sebastiano Vigna's SplitMix64 finalizer: a fast, well-mixed hash of a word.
#[inline]
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The clock-id field's bits in a state, as a plain number.
#[cfg(test)]
pub(crate) fn clock_id_of(layout: &Layout, state: u64) -> u64 {
    layout
        .clock_id_field()
        .map_or(0, |f| (state >> f.shift()) & mask(f.bits()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const EPOCH: u64 = 1_600_000_000_000;

    fn layout(seq: u32, clock: u32) -> Layout {
        let mut b = Layout::builder()
            .epoch_ms(EPOCH)
            .timestamp_bits(41)
            .node("worker", 4);
        if clock > 0 {
            b = b.clock_id(clock);
        }
        b.sequence(seq).build().unwrap()
    }

    fn plan(layout: Layout, on_exhausted: OnExhausted, on_behind: OnClockBehind) -> Plan {
        Plan::new(
            layout,
            PlanConfig {
                node_bits: 0,
                node_id: 0,
                on_exhausted,
                on_behind,
                start_bound: 0,
                seed: 0,
                first_clock_id: 0,
                reservation: None,
                fence: None,
            },
        )
    }

    /// Issues one ID at `now` (ms after the epoch), returning the new state.
    fn one(p: &Plan, state: &mut u64, now: u64) -> Result<u64, Stall> {
        let step = p.advance(*state, EPOCH + now, 1)?;
        assert_eq!(step.count, 1);
        assert_eq!(step.first, step.next);
        *state = step.next;
        Ok(step.first)
    }

    #[test]
    fn new_tick_then_sequence_then_exhaustion() {
        let p = plan(layout(2, 0), OnExhausted::Wait, OnClockBehind::Continue);
        let mut s = p.initial_state();
        let a = one(&p, &mut s, 5).unwrap();
        assert_eq!((p.ts_of(a), p.seq_of(a)), (5, 0));
        for expect in 1..=3 {
            let id = one(&p, &mut s, 5).unwrap();
            assert_eq!((p.ts_of(id), p.seq_of(id)), (5, expect));
        }
        assert_eq!(one(&p, &mut s, 5), Err(Stall::Exhausted { retry_ms: 1 }));
        let b = one(&p, &mut s, 6).unwrap();
        assert_eq!((p.ts_of(b), p.seq_of(b)), (6, 0));
    }

    #[test]
    fn batches_stop_at_the_end_of_the_tick() {
        let p = plan(layout(4, 0), OnExhausted::Wait, OnClockBehind::Continue);
        let s = p.initial_state();
        let step = p.advance(s, EPOCH + 9, 100).unwrap();
        assert_eq!(step.count, 16);
        assert_eq!(p.seq_of(step.first), 0);
        assert_eq!(p.seq_of(step.next), 15);
        let again = p.advance(step.next, EPOCH + 9, 1);
        assert!(matches!(again, Err(Stall::Exhausted { .. })));
    }

    #[test]
    fn borrow_moves_ahead_up_to_the_allowance() {
        let p = plan(
            layout(1, 0),
            OnExhausted::Borrow {
                max_ahead: Duration::from_millis(3),
            },
            OnClockBehind::Error,
        );
        let mut s = p.initial_state();
        let mut ts = Vec::new();
        while let Ok(id) = one(&p, &mut s, 100) {
            ts.push(p.ts_of(id));
        }
        // Ticks 100..=103, two IDs each, then it must wait for tick 101.
        assert_eq!(ts, [100, 100, 101, 101, 102, 102, 103, 103]);
        assert_eq!(one(&p, &mut s, 100), Err(Stall::Exhausted { retry_ms: 1 }));
        // Borrowed lead is not "clock behind", even with the Error policy.
        assert!(one(&p, &mut s, 101).is_ok());
    }

    #[test]
    fn clock_behind_policies() {
        let l = layout(4, 0);
        for (policy, expect_ok) in [
            (OnClockBehind::Continue, true),
            (OnClockBehind::Error, false),
            (
                OnClockBehind::Wait {
                    max: Duration::from_millis(5),
                },
                false,
            ),
        ] {
            let p = plan(l.clone(), OnExhausted::Wait, policy);
            let mut s = p.initial_state();
            one(&p, &mut s, 50).unwrap();
            let r = one(&p, &mut s, 40);
            if expect_ok {
                let id = r.unwrap();
                assert_eq!((p.ts_of(id), p.seq_of(id)), (50, 1), "{policy:?}");
            } else {
                assert_eq!(r, Err(Stall::Behind { behind_ms: 10 }), "{policy:?}");
            }
        }
    }

    #[test]
    fn next_clock_on_behind_issues_at_the_real_time_with_a_new_clock_id() {
        let l = layout(4, 2);
        let p = plan(l.clone(), OnExhausted::Wait, OnClockBehind::NextClock);
        let mut s = p.initial_state();
        one(&p, &mut s, 50).unwrap();
        let mut seen = Vec::new();
        for now in [40, 30, 20, 10] {
            let id = one(&p, &mut s, now).unwrap();
            seen.push((p.ts_of(id), clock_id_of(&l, id)));
        }
        // Three bumps use clock ids 1..=3; the fourth would reuse 0, so the
        // generator continues on the last timestamp instead.
        assert_eq!(seen, [(40, 1), (30, 2), (20, 3), (20, 3)]);
    }

    #[test]
    fn next_clock_on_exhaustion_stays_in_the_tick() {
        let l = Layout::builder()
            .epoch_ms(EPOCH)
            .timestamp_bits(41)
            .clock_id(2)
            .sequence(1)
            .build()
            .unwrap();
        let p = plan(l.clone(), OnExhausted::NextClock, OnClockBehind::Continue);
        let mut s = p.initial_state();
        let mut seen = Vec::new();
        while let Ok(id) = one(&p, &mut s, 7) {
            seen.push((p.ts_of(id), clock_id_of(&l, id), p.seq_of(id)));
        }
        assert_eq!(
            seen,
            [
                (7, 0, 0),
                (7, 0, 1),
                (7, 1, 0),
                (7, 1, 1),
                (7, 2, 0),
                (7, 2, 1),
                (7, 3, 0),
                (7, 3, 1)
            ]
        );
        assert!(seen.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn next_clock_on_exhaustion_never_wraps_to_a_lower_clock_id() {
        let l = Layout::builder()
            .epoch_ms(EPOCH)
            .timestamp_bits(41)
            .clock_id(2)
            .sequence(1)
            .build()
            .unwrap();
        let mut p = plan(l.clone(), OnExhausted::NextClock, OnClockBehind::Continue);
        // Started on clock id 2 (a restart under RestartRule::NextClockId, or
        // the builder's `clock_id`): only clock id 3 is above it.
        p.first_clock_id = 2;
        let mut s = p.initial_state();
        let mut seen = Vec::new();
        while let Ok(id) = one(&p, &mut s, 7) {
            seen.push((p.ts_of(id), clock_id_of(&l, id), p.seq_of(id)));
        }
        assert_eq!(seen, [(7, 2, 0), (7, 2, 1), (7, 3, 0), (7, 3, 1)]);
        assert_eq!(one(&p, &mut s, 7), Err(Stall::Exhausted { retry_ms: 1 }));
        // The next tick continues on clock id 3, then waits again.
        assert_eq!(one(&p, &mut s, 8).map(|id| clock_id_of(&l, id)), Ok(3));
        assert_eq!(one(&p, &mut s, 8).map(|id| clock_id_of(&l, id)), Ok(3));
        assert!(one(&p, &mut s, 8).is_err());
    }

    #[test]
    fn expiry_is_reported_not_wrapped() {
        let l = Layout::builder()
            .epoch_ms(EPOCH)
            .timestamp_bits(3)
            .sequence(1)
            .build()
            .unwrap();
        let p = plan(l, OnExhausted::Wait, OnClockBehind::Continue);
        let mut s = p.initial_state();
        one(&p, &mut s, 7).unwrap();
        one(&p, &mut s, 7).unwrap();
        // Tick 7 is the last; its sequence is used up: wait for the clock
        // to pass the end, which expires it.
        assert_eq!(one(&p, &mut s, 7), Err(Stall::Exhausted { retry_ms: 1 }));
        assert_eq!(one(&p, &mut s, 8), Err(Stall::Expired));
    }

    #[test]
    fn the_short_path_agrees_with_advance_wherever_it_applies() {
        // Every policy, sequence widths down to one bit, clocks around,
        // behind and ahead of the state, batches: whenever the short path
        // gives a step, `advance` gives the same one.
        let policies = [
            (OnExhausted::Wait, OnClockBehind::Continue),
            (
                OnExhausted::Borrow {
                    max_ahead: Duration::from_millis(3),
                },
                OnClockBehind::Error,
            ),
            (OnExhausted::Error, OnClockBehind::Error),
            (OnExhausted::NextClock, OnClockBehind::NextClock),
        ];
        // Miri interprets every step; fewer still reach each case.
        let steps: u64 = if cfg!(miri) { 400 } else { 20_000 };
        let mut applied = 0;
        for seq_bits in [1, 2, 12] {
            for (on_exhausted, on_behind) in policies {
                let p = plan(layout(seq_bits, 2), on_exhausted, on_behind);
                let mut x = 0x2545_f491_4f6c_dd1d_u64;
                let mut state = p.initial_state();
                for i in 0..steps {
                    x = splitmix64(x);
                    // Mostly advancing, sometimes a little behind or ahead.
                    let now = EPOCH + 100 + i / 40 + x % 4 - 2;
                    let n = 1 + (x >> 8) % 5;
                    let short = p.advance_in_tick(state, now, n);
                    let full = p.advance(state, now, n);
                    if let Some(step) = short {
                        assert_eq!(Ok(step), full, "state {state:#x} now {now} n {n}");
                        applied += 1;
                    }
                    if let Ok(step) = full {
                        state = step.next;
                    }
                }
            }
        }
        assert!(
            applied >= steps / 2,
            "short path applied only {applied} times"
        );
    }

    #[test]
    fn random_starts_stay_below_the_bound_and_vary() {
        let mut p = plan(layout(10, 0), OnExhausted::Wait, OnClockBehind::Continue);
        p.start_bound = 100;
        p.seed = 12345;
        let starts: Vec<u64> = (0..1000).map(|t| p.start(t, 0)).collect();
        assert!(starts.iter().all(|&s| s < 100));
        let distinct: std::collections::HashSet<_> = starts.iter().collect();
        assert!(
            distinct.len() > 90,
            "only {} distinct starts",
            distinct.len()
        );
        let odd = starts.iter().filter(|&&s| s % 2 == 1).count();
        assert!((400..600).contains(&odd), "{odd} odd starts of 1000");
    }
}
