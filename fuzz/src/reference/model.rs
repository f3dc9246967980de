//! flakeid's generator written again, naively, from its documented rules
//! alone: the crate docs' guarantees, the `OnExhausted` and `OnClockBehind`
//! docs, the `Builder` docs and the `Generator` call docs. It shares no code
//! with `src/generator/` (no `Plan`, no wait functions): the state is three
//! numbers, the last ID's tick, sequence value and clock id, and each rule
//! below cites the sentence it comes from.
//!
//! Where the docs leave a choice open, the choice made is marked
//! "Ambiguous:" and says why it was made.

use std::collections::BTreeSet;
use std::time::Duration;

use flakeid::{GenerateError, Layout, OnClockBehind, OnExhausted};

/// What one call should do, by the rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Issue IDs in `tick` under `clock_id`. `first` is the first sequence
    /// value when it follows the state's (the same tick and clock id), or
    /// `None` when the IDs open a tick or clock id afresh, whose sequence
    /// starts at 0 or, with `random_start(bound)`, somewhere below `bound`.
    /// The batch then runs to `n` IDs or the end of the tick, whichever
    /// comes first.
    Issue {
        tick: u64,
        clock_id: u64,
        first: Option<u64>,
        /// A tick entered ahead of the clock (`OnExhausted::Borrow`).
        borrowed: bool,
    },
    /// Every call reports this error at once.
    Report(GenerateError),
    /// The policy waits: a blocking call waits (for the clock to move by
    /// the error's duration), `poll_*` reports this error.
    Stall(GenerateError),
}

impl Verdict {
    /// How long a waiting caller waits, for a stall.
    pub fn wait(&self) -> Option<Duration> {
        match self {
            Verdict::Stall(GenerateError::SequenceExhausted { retry_after: d })
            | Verdict::Stall(GenerateError::ClockBehind { behind: d }) => Some(*d),
            _ => None,
        }
    }
}

/// The configuration, reduced to the numbers the rules use.
#[derive(Debug, Clone)]
pub struct Rules {
    pub epoch_ms: u64,
    pub unit_ms: u64,
    /// The largest timestamp field value.
    pub last_tick: u64,
    /// The largest sequence value.
    pub last_seq: u64,
    /// The largest clock id (0 without a clock-id field).
    pub last_clock_id: u64,
    /// The lead allowance, in whole ticks.
    pub lead: u64,
    pub on_exhausted: OnExhausted,
    pub on_behind: OnClockBehind,
    pub random_bound: Option<u64>,
}

/// A generator's configuration as the builder takes it.
#[derive(Debug, Clone)]
pub struct Config {
    pub node_id: u64,
    pub clock_id: u64,
    pub on_exhausted: OnExhausted,
    pub on_behind: OnClockBehind,
    pub random_bound: Option<u64>,
}

impl Rules {
    /// The rules for `config` on `layout`, or why the builder must refuse it.
    ///
    /// `Builder::build`'s `# Errors`: "if the node id or clock id does not
    /// fit the layout, a `NextClock` policy has no clock-id field to use, a
    /// `Borrow` allowance is shorter than one tick, the random start bound is
    /// out of range". `OnExhausted::NextClock`: "Needs a clock-id field above
    /// the sequence field".
    pub fn new(layout: &Layout, config: &Config) -> Result<Rules, &'static str> {
        let width = |name: &str| layout.field(name).map_or(0, |f| f.bits());
        let shift = |name: &str| layout.field(name).map(|f| f.shift());
        let ones = |bits: u32| {
            if bits == 0 {
                0
            } else {
                u64::MAX >> (64 - bits)
            }
        };
        let unit_ms = layout.unit_ms();
        let last_seq = ones(width("sequence"));
        let last_clock_id = ones(width("clock_id"));
        let node_bits: u32 = layout
            .fields()
            .iter()
            .filter(|f| !["timestamp", "sequence", "clock_id"].contains(&f.name()))
            .map(|f| f.bits())
            .sum();
        if config.node_id > ones(node_bits) {
            return Err("node id does not fit");
        }
        if config.clock_id > last_clock_id {
            return Err("clock id does not fit");
        }
        let lead = match config.on_exhausted {
            OnExhausted::Borrow { max_ahead } => {
                // Ambiguous: the allowance in ticks. `max_ahead` is a
                // duration, the timestamp moves "one tick at a time, up to
                // `max_ahead` ahead", and an allowance under one tick is
                // refused: read as whole ticks, rounded down.
                let ticks = max_ahead.as_millis() / u128::from(unit_ms);
                if ticks == 0 {
                    return Err("borrow allowance under one tick");
                }
                u64::try_from(ticks).unwrap_or(u64::MAX)
            }
            OnExhausted::NextClock => {
                match (shift("clock_id"), shift("sequence")) {
                    (Some(c), Some(s)) if c > s => {}
                    _ => {
                        return Err("OnExhausted::NextClock without a clock id above the sequence");
                    }
                }
                0
            }
            _ => 0,
        };
        if config.on_behind == OnClockBehind::NextClock && shift("clock_id").is_none() {
            return Err("OnClockBehind::NextClock without a clock-id field");
        }
        if let Some(bound) = config.random_bound {
            // "A tick then holds at least `capacity - bound + 1` IDs": at
            // least one, so `bound <= capacity`; a start "below `bound`"
            // needs `bound >= 1`.
            if bound == 0 || bound > last_seq + 1 {
                return Err("random start bound out of range");
            }
        }
        Ok(Rules {
            epoch_ms: layout.epoch_ms(),
            unit_ms,
            last_tick: ones(width("timestamp")),
            last_seq,
            last_clock_id,
            lead,
            on_exhausted: config.on_exhausted,
            on_behind: config.on_behind,
            random_bound: config.random_bound,
        })
    }

    /// `Layout::last_ms`: the last millisecond of the last tick.
    pub fn last_ms(&self) -> u64 {
        self.epoch_ms + (self.last_tick + 1) * self.unit_ms - 1
    }

    /// When `tick` starts, in Unix ms.
    pub fn unix_ms(&self, tick: u64) -> u64 {
        self.epoch_ms + tick * self.unit_ms
    }

    /// The clock's tick. Ambiguous: a reading before the epoch. The docs do
    /// not say; `Layout::timestamp_at_clamped` clamps it to tick 0, taken
    /// here as the generator's reading too.
    pub fn tick_of(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.epoch_ms) / self.unit_ms
    }
}

/// The generator's state: "the last ID handed out" (`Generator::last_id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct State {
    pub tick: u64,
    pub seq: u64,
    pub clock_id: u64,
}

/// The model: rules plus state plus the counters it can predict.
#[derive(Debug, Clone)]
pub struct Model {
    pub rules: Rules,
    pub state: State,
    /// The clock ids used so far: "Each clock id is used at most once in a
    /// generator's life" (both `NextClock` policies).
    pub used: BTreeSet<u64>,
    pub issued: u64,
    pub borrowed_ticks: u64,
    pub clock_id_bumps: u64,
    /// For a clock with a cached reading (`Clock::recent_ms`), that reading:
    /// "a value `now_ms` returned at some moment before this call".
    pub cached: Option<u64>,
}

impl Model {
    pub fn new(rules: Rules, state: State, cached: Option<u64>) -> Model {
        Model {
            rules,
            used: BTreeSet::from([state.clock_id]),
            state,
            issued: 0,
            borrowed_ticks: 0,
            clock_id_bumps: 0,
            cached,
        }
    }

    /// Whether a call continues the state's tick on the cached reading
    /// alone. `Clock::recent_ms`: "A generator reads it on its fast path and
    /// uses it only to continue the tick it names ... every other decision
    /// ... is made on `now_ms`", and "a step back ... shows only once the
    /// generator reads `now_ms`". Ambiguous: when the fast path applies;
    /// taken as exactly when the cached reading lies in the state's tick
    /// (a reading before the epoch lies in none) and the tick has room, the
    /// one case where continuing needs no decision.
    fn continues_on_cached(&self) -> bool {
        let r = &self.rules;
        self.cached.is_some_and(|cached| {
            cached >= r.epoch_ms
                && r.tick_of(cached) == self.state.tick
                && self.state.seq < r.last_seq
        })
    }

    /// What a call that was made at precise reading `now_ms` leaves as the
    /// cached reading: unchanged if it continued on the cached one, else the
    /// precise reading it took. Call before [`commit`](Model::commit).
    pub fn called_at(&mut self, now_ms: u64) {
        if self.cached.is_some() && !self.continues_on_cached() {
            self.cached = Some(now_ms);
        }
    }

    /// What a call for one or more IDs at clock reading `now_ms` does (how
    /// many a batch gets is [`batch_len`](Model::batch_len)).
    pub fn decide(&self, now_ms: u64) -> Verdict {
        let r = &self.rules;
        let State { tick, clock_id, .. } = self.state;
        if self.continues_on_cached() {
            return Verdict::Issue {
                tick,
                clock_id,
                first: Some(self.state.seq + 1),
                borrowed: false,
            };
        }
        // `GenerateError::Expired`: "The clock is past the last instant the
        // layout can encode."
        if now_ms > r.last_ms() {
            return Verdict::Report(GenerateError::Expired {
                last_ms: r.last_ms(),
            });
        }
        let clock = r.tick_of(now_ms);
        // `OnClockBehind`: "A reading that lags the last timestamp by no
        // more than the `Borrow` allowance is not 'behind'".
        if clock + r.lead < tick {
            // Ambiguous: `behind` is "How far the clock is behind": taken as
            // from the reading to the start of the last timestamp's tick
            // (the `try_next_id` example: issue, rewind 2 s, behind 2 s),
            // not to where the allowance would let it issue.
            let behind = Duration::from_millis(r.unix_ms(tick) - now_ms);
            let error = GenerateError::ClockBehind { behind };
            return match r.on_behind {
                // "Keep issuing on the last timestamp ... When that tick's
                // sequence runs out, the exhaustion policy applies."
                OnClockBehind::Continue => self.in_state_tick(now_ms, clock),
                // "Wait up to `max` for the clock to catch up, then report
                // ... A clock already further behind than `max` is reported
                // at once".
                OnClockBehind::Wait { max } if behind > max => Verdict::Report(error),
                OnClockBehind::Wait { .. } => Verdict::Stall(error),
                // "Report ... at once".
                OnClockBehind::Error => Verdict::Report(error),
                // "Bump the clock id and issue at the real, earlier time ...
                // Each clock id is used at most once in a generator's life;
                // once all are used ... continues on the last timestamp as
                // with `Continue`." Ambiguous: which clock id a "bump"
                // takes. Order is given up here anyway, and "once all are
                // used" counts every clock id, lower ones included: taken as
                // the next unused one up, counting round from the highest
                // to 0.
                OnClockBehind::NextClock => match self.unused_after(clock_id) {
                    Some(next) => Verdict::Issue {
                        tick: clock,
                        clock_id: next,
                        first: None,
                        borrowed: false,
                    },
                    None => self.in_state_tick(now_ms, clock),
                },
                _ => unreachable!("a policy the model does not know"),
            };
        }
        if clock > tick {
            // The crate docs: the successor is "the first of a new tick";
            // the clock id stays (used at most once, never back down).
            return Verdict::Issue {
                tick: clock,
                clock_id,
                first: None,
                borrowed: false,
            };
        }
        self.in_state_tick(now_ms, clock)
    }

    /// The clock reads the state's tick, or behind it where the policy
    /// continues there: the next sequence value, or the exhaustion policy.
    fn in_state_tick(&self, now_ms: u64, clock: u64) -> Verdict {
        let r = &self.rules;
        let State {
            tick,
            seq,
            clock_id,
        } = self.state;
        if seq < r.last_seq {
            return Verdict::Issue {
                tick,
                clock_id,
                first: Some(seq + 1),
                borrowed: false,
            };
        }
        let next = tick + 1;
        // `GenerateError::SequenceExhausted`'s `retry_after`: "About how
        // long until the next tick can be used": when the clock plus the
        // allowance reaches it. Ambiguous: in the layout's last tick there
        // is no next tick; taken as the time until the clock passes the end
        // (after which every call is `Expired`), since `Expired` is only
        // for "the clock ... past the last instant".
        let exhausted = || {
            let until = if next > r.last_tick {
                r.last_ms() + 1
            } else {
                r.unix_ms(next - r.lead)
            };
            GenerateError::SequenceExhausted {
                retry_after: Duration::from_millis(until - now_ms),
            }
        };
        match r.on_exhausted {
            // "Move to the next clock id within the same tick instead of
            // waiting ... it only moves up to higher clock ids ... once none
            // is left above the current one, the generator waits": the
            // lowest unused one above.
            OnExhausted::NextClock if self.unused_above(clock_id).is_some() => Verdict::Issue {
                tick,
                clock_id: self.unused_above(clock_id).unwrap(),
                first: None,
                borrowed: false,
            },
            // "Move the timestamp logically ahead of the clock, one tick at
            // a time, up to `max_ahead` ahead of it; past that, wait."
            OnExhausted::Borrow { .. } if next <= r.last_tick && next <= clock + r.lead => {
                Verdict::Issue {
                    tick: next,
                    clock_id,
                    first: None,
                    borrowed: true,
                }
            }
            // "Report `SequenceExhausted` instead of waiting".
            OnExhausted::Error => Verdict::Report(exhausted()),
            // `Wait`: "Wait until the clock reaches the next tick".
            _ => Verdict::Stall(exhausted()),
        }
    }

    /// The lowest clock id above `clock_id` not used yet.
    fn unused_above(&self, clock_id: u64) -> Option<u64> {
        (clock_id + 1..=self.rules.last_clock_id).find(|c| !self.used.contains(c))
    }

    /// The first clock id after `clock_id`, counting round from the highest
    /// to 0, not used yet.
    fn unused_after(&self, clock_id: u64) -> Option<u64> {
        self.unused_above(clock_id)
            .or_else(|| (0..clock_id).find(|c| !self.used.contains(c)))
    }

    /// The first sequence value of a tick or clock id opened afresh, if the
    /// rules fix it: 0 without a random start. With one, the value is the
    /// generator's pseudo-random choice, which the docs leave open beyond
    /// "below `bound`".
    pub fn fresh_start(&self) -> Option<u64> {
        match self.rules.random_bound {
            None => Some(0),
            Some(_) => None,
        }
    }

    /// How many IDs a batch for `n` starting at `first` in one tick holds:
    /// "at least one ID and at most the rest of the current tick (fewer
    /// than `n` when the tick runs out)", so exactly the smaller.
    pub fn batch_len(&self, n: u64, first: u64) -> u64 {
        n.min(self.rules.last_seq - first + 1)
    }

    /// Records `len` IDs issued as `verdict` says, from sequence `first`.
    pub fn commit(&mut self, verdict: &Verdict, first: u64, len: u64) {
        let Verdict::Issue {
            tick,
            clock_id,
            borrowed,
            ..
        } = *verdict
        else {
            panic!("commit of {verdict:?}");
        };
        if clock_id != self.state.clock_id {
            self.clock_id_bumps += 1;
            assert!(self.used.insert(clock_id), "the model reused a clock id");
        }
        if borrowed {
            self.borrowed_ticks += 1;
        }
        self.issued += len;
        self.state = State {
            tick,
            seq: first + len - 1,
            clock_id,
        };
    }
}
