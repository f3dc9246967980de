//! The model's state and actions: holders (a keeper and its generator
//! each) and the store, on integer ticks.
//!
//! Time is the store's ticks (`now`). Each holder's monotonic clock, which
//! its keeper counts deadlines and waits on, runs at a fixed rate of the
//! store's (`rate`: slower by at most what its safety margin absorbs);
//! its wall clock, which marks and IDs are in, is the store's time plus a
//! skew, stepped back once by a rollback. A keeper has one request out at
//! a time (its store calls block); the checker decides when the store
//! applies it (a delay), whether the answer is lost, when the answer
//! arrives (late), and whether a renewal leaves a copy the store applies
//! later (a hedged request). A holder that takes no step for a while is a
//! paused process. At each tick every open fence issues an ID at its
//! generator's timestamp.

use stateright::Model;

use super::store::{self, Granted, On, Store, Who};
use crate::lease::keeper::{Ask, Rules};
use crate::plant::Plant;

/// The model's time starts here: past every TTL, so that the first epoch
/// needs no waiting.
pub(crate) const START: u8 = 8;

/// One holder's lease terms and clocks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spec {
    /// Ticks after the start at which its process starts.
    pub(crate) joins: u8,
    pub(crate) ttl: u8,
    pub(crate) margin: u8,
    /// How often its keeper renews (its monotonic ticks).
    pub(crate) renew_every: u8,
    /// Its monotonic clock reads `now * rate.0 / rate.1`.
    pub(crate) rate: (u8, u8),
    /// Its wall clock runs this far ahead of the store's.
    pub(crate) skew: u8,
    /// Its wall clock may step forward this far, once (0: never): its IDs
    /// run ahead of the others', which only the mark carries over.
    pub(crate) leap: u8,
    /// Its wall clock may step back this far, once (0: never).
    pub(crate) rollback: u8,
    /// A generator whose clock is this far behind its timestamp asks for
    /// a rotation.
    pub(crate) rotate_after: u8,
}

/// The lease protocol as a model: holders, one store, a horizon, a plant.
#[derive(Debug, Clone)]
pub(crate) struct Lease {
    pub(crate) holders: Vec<Spec>,
    pub(crate) nodes: usize,
    /// The last tick explored.
    pub(crate) horizon: u8,
    /// Whether the store may fail over (once).
    pub(crate) failover: bool,
    /// How many faults a history may have: a request delayed, answered
    /// late, its answer lost or copied, a holder cut off.
    pub(crate) faults: u8,
    pub(crate) plant: Option<Plant>,
}

/// A claim a keeper holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Held {
    pub(crate) node: u8,
    /// The claim's handle: when the store applied it.
    pub(crate) since: u8,
    /// The mark found when claiming.
    pub(crate) mark: u8,
    /// The mark recorded for this holder, as far as it knows.
    pub(crate) ceiling: u8,
    /// The ceiling the fence was last given.
    pub(crate) granted: u8,
    /// Monotonic tick until which the lease is proven valid.
    pub(crate) valid_until: u8,
    /// The fence waits to open until this monotonic tick (the epoch rule).
    pub(crate) waiting: Option<u8>,
    pub(crate) floor: u8,
    pub(crate) rewind: bool,
    /// Ghost: the latest tick any server keeps this claim alive until.
    pub(crate) expiry: u8,
}

/// A request a keeper sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Request {
    /// Sent at monotonic tick `sent`.
    Claim {
        sent: u8,
        fresh_before: Option<u8>,
        ceiling: u8,
    },
    Renew {
        sent: u8,
        ceiling: u8,
    },
    Release {
        node: u8,
        since: u8,
        mark: Option<u8>,
    },
}

/// The store's answer, as the keeper gets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Answer {
    Claimed(Option<Granted>),
    Renewed(bool),
    Released,
    /// Unreachable, refused or lost.
    Failed,
}

/// A request in flight, and its answer once the store applied it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Out {
    pub(crate) request: Request,
    pub(crate) on: On,
    pub(crate) answer: Option<Answer>,
}

/// A renewal's copy that the store applies later: node, claim, ceiling.
type Stray = (u8, u8, u8);

/// One holder: its keeper's state, its fence and its generator's timestamp.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Holder {
    pub(crate) held: Option<Held>,
    /// The fence's deadline (monotonic ticks; 0: closed).
    pub(crate) fence_until: u8,
    pub(crate) out: Option<Out>,
    /// A claim to give back: node, handle, the mark to leave.
    pub(crate) orphan: Option<(u8, u8, Option<u8>)>,
    pub(crate) next_renewal: u8,
    pub(crate) next_claim: u8,
    pub(crate) next_rotation: u8,
    /// The generator's timestamp: the last tick it issued in.
    pub(crate) last: u8,
    pub(crate) rolled: bool,
    pub(crate) leapt: bool,
    /// Still talking to the primary a failover deposed.
    pub(crate) on_deposed: bool,
    /// Cut off from the store: every request is lost before it.
    pub(crate) cut: bool,
    pub(crate) stray: Option<Stray>,
    /// Ghost: the fence was seen closed under the grant it has.
    pub(crate) seen_closed: bool,
}

/// What each node id's IDs were, for the hand-off order.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub(crate) struct Issued {
    /// The highest tick issued under grants before the latest one.
    pub(crate) before: u8,
    /// The highest tick issued under the latest grant, and its holder.
    pub(crate) latest: u8,
    pub(crate) holder: Option<u8>,
}

/// The whole system.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct State {
    pub(crate) now: u8,
    pub(crate) holders: Vec<Holder>,
    pub(crate) store: Store,
    pub(crate) issued: Vec<Issued>,
    pub(crate) stray_used: bool,
    pub(crate) failed_over: bool,
    /// Faults so far.
    pub(crate) faults: u8,
    /// Ghosts for the properties, recorded as the generators issue.
    pub(crate) double_open: bool,
    pub(crate) past_expiry: bool,
    pub(crate) order_broken: bool,
    pub(crate) reopened: bool,
    pub(crate) took_over: bool,
    pub(crate) opened_after_failover: bool,
    pub(crate) rotated: bool,
}

/// What becomes of a holder's request in one tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Fate {
    /// Nothing yet: not applied (delayed), or its answer not arrived.
    Wait,
    /// Applied (if it was not), answered.
    Answer,
    /// Applied now; its answer arrives in a later tick.
    Late,
    /// Applied, its answer lost: the keeper sees a failure.
    Lost,
    /// Lost before the store: the keeper sees a failure.
    Dropped,
    /// A renewal applied and answered, and a copy of it left behind that
    /// the store applies later (a hedged or retried request).
    Copied,
}

/// The most holders a model has.
pub(crate) const MAX_HOLDERS: usize = 3;

/// What the checker may do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Action {
    /// One tick: every keeper takes its round of decisions (sending at
    /// most one request), each request meets its fate, the keepers take
    /// in the answers that arrived, every open fence issues an ID, and
    /// time moves on.
    Tick([Fate; MAX_HOLDERS]),
    /// The store applies a renewal's copy, late.
    ApplyCopy(u8),
    /// The lagging replica catches up.
    Sync,
    /// Sentinel promotes the lagging replica.
    Failover,
    /// A holder's wall clock steps back.
    Rollback(u8),
    /// A holder's wall clock steps forward.
    Leap(u8),
    /// A holder is cut off from the store, for good.
    Cut(u8),
}

impl Lease {
    /// A holder's monotonic clock at `now`.
    pub(crate) fn local(&self, h: usize, now: u8) -> u8 {
        let (num, den) = self.holders[h].rate;
        (u16::from(now) * u16::from(num) / u16::from(den)) as u8
    }

    /// A holder's wall clock (ticks) at `now`.
    pub(crate) fn wall(&self, h: usize, holder: &Holder, now: u8) -> u8 {
        let spec = &self.holders[h];
        let back = if holder.rolled { spec.rollback } else { 0 };
        let leap = if holder.leapt { spec.leap } else { 0 };
        (now + spec.skew + leap).saturating_sub(back)
    }

    /// The keeper's rules for holder `h`, in its monotonic ticks.
    pub(crate) fn rules(&self, h: usize) -> Rules {
        let spec = &self.holders[h];
        Rules {
            valid_for: u64::from(spec.ttl - spec.margin),
            plant: self.plant,
        }
    }

    fn who(&self, h: usize) -> Who {
        Who {
            holder: h as u8,
            ttl: self.holders[h].ttl,
        }
    }

    fn ttls(&self) -> Vec<u8> {
        self.holders.iter().map(|s| s.ttl).collect()
    }

    /// Whether holder `h`'s fence is open at `now`: the node id it is
    /// open for.
    pub(crate) fn open_node(&self, state: &State, h: usize) -> Option<u8> {
        let holder = &state.holders[h];
        let held = holder.held.as_ref()?;
        (held.waiting.is_none() && self.local(h, state.now) < holder.fence_until)
            .then_some(held.node)
    }

    /// The rotation the generator of `h` asks for: the fresh node id's
    /// marks must be before this tick (its clock's).
    fn rotation(&self, state: &State, h: usize) -> Option<u8> {
        let holder = &state.holders[h];
        let spec = &self.holders[h];
        let wall = self.wall(h, holder, state.now);
        (spec.rollback > 0
            && self.open_node(state, h).is_some()
            && holder.last >= wall.saturating_add(spec.rotate_after))
        .then_some(wall)
    }

    /// A keeper's round (`Run::step`), at most one request sent; `false`
    /// if nothing changes.
    fn step(&self, state: &mut State, h: usize) -> bool {
        let local = self.local(h, state.now);
        let spec = self.holders[h];
        let wall = self.wall(h, &state.holders[h], state.now);
        let rotation = self.rotation(state, h);
        let holder = &mut state.holders[h];
        if holder.out.is_some() || state.now < START + spec.joins {
            return false;
        }
        let on = if holder.on_deposed {
            On::Deposed
        } else {
            On::Primary
        };
        let send = |holder: &mut Holder, request| {
            holder.out = Some(Out {
                request,
                on,
                answer: None,
            });
        };
        if let Some((node, since, mark)) = holder.orphan.take() {
            send(holder, Request::Release { node, since, mark });
            return true;
        }
        if let Some(held) = holder.held.clone() {
            // A waiting claim's fence opens once the wait is over (in the
            // keeper, after a renewal in the same round: both happen at
            // this tick).
            let mut changed = false;
            if let Some(opens_at) = held.waiting
                && local >= opens_at
                && local < held.valid_until
            {
                let held = holder.held.as_mut().expect("held");
                held.waiting = None;
                held.granted = held.ceiling;
                holder.fence_until = held.valid_until;
                let (node, floor, rewind) = (held.node, held.floor, held.rewind);
                opened(state, h, node, floor, rewind);
                changed = true;
            }
            let holder = &mut state.holders[h];
            if let Some(fresh_before) = rotation
                && local >= holder.next_rotation
            {
                let ceiling = wall + spec.ttl;
                send(
                    holder,
                    Request::Claim {
                        sent: local,
                        fresh_before: Some(fresh_before),
                        ceiling,
                    },
                );
                return true;
            }
            if local >= holder.next_renewal && local < held.valid_until {
                let ceiling = (wall + spec.ttl).max(held.ceiling);
                send(
                    holder,
                    Request::Renew {
                        sent: local,
                        ceiling,
                    },
                );
                return true;
            }
            if local >= held.valid_until {
                // Lapsed: the fence stays closed; the claim goes back with
                // the ceiling the generator had.
                let held = holder.held.take().expect("held");
                holder.fence_until = 0;
                holder.orphan = Some((held.node, held.since, Some(held.granted.max(held.mark))));
                holder.next_claim = 0;
                return true;
            }
            return changed;
        }
        if local >= holder.next_claim {
            let ceiling = wall + spec.ttl;
            send(
                holder,
                Request::Claim {
                    sent: local,
                    fresh_before: None,
                    ceiling,
                },
            );
            return true;
        }
        false
    }

    /// The store applies holder `h`'s request at `now`.
    fn apply(&self, state: &mut State, h: usize, out: Out) -> Answer {
        let (now, who, ttls, plant) = (state.now, self.who(h), self.ttls(), self.plant);
        let server = state.store.server(out.on);
        match out.request {
            Request::Claim {
                fresh_before,
                ceiling,
                ..
            } => {
                let ask = Ask {
                    first: 0,
                    last: self.nodes as u64 - 1,
                    fresh_before_ms: fresh_before.map(u64::from),
                    usable_until_ms: u64::MAX,
                    ceiling_ms: u64::from(ceiling),
                };
                match store::claim(server, now, who, &ttls, &ask, plant) {
                    Ok(granted) => Answer::Claimed(granted),
                    Err(()) => Answer::Failed,
                }
            }
            Request::Renew { ceiling, .. } => {
                let Some(held) = &state.holders[h].held else {
                    unreachable!("a renewal without a claim")
                };
                let (node, since) = (held.node, held.since);
                let renewed = store::renew(server, now, who, node, since, ceiling, plant);
                self.note_renewed(state, h, out.on, node, since);
                match renewed {
                    Ok(renewed) => Answer::Renewed(renewed),
                    Err(()) => Answer::Failed,
                }
            }
            Request::Release { node, since, mark } => {
                store::release(server, now, who, node, since, mark);
                Answer::Released
            }
        }
    }

    /// Ghost: the claim's expiry, after a renewal of it reached `on`.
    fn note_renewed(&self, state: &mut State, h: usize, on: On, node: u8, since: u8) {
        let expires = state.store.server(on).data.keys[usize::from(node)]
            .filter(|k| usize::from(k.holder) == h && k.since == since)
            .map(|k| k.expires);
        if let (Some(expires), Some(held)) = (expires, &mut state.holders[h].held)
            && held.node == node
            && held.since == since
        {
            held.expiry = held.expiry.max(expires);
        }
    }

    /// Holder `h`'s keeper takes in the answer to its request, at `now`.
    fn deliver(&self, state: &mut State, h: usize, request: Request, answer: Answer) {
        let local = self.local(h, state.now);
        let spec = self.holders[h];
        let rules = self.rules(h);
        let holder = &mut state.holders[h];
        if answer == Answer::Failed {
            // The keeper resolves the primary again.
            holder.on_deposed = false;
        }
        match (request, answer) {
            (
                Request::Claim {
                    sent, fresh_before, ..
                },
                Answer::Claimed(Some(g)),
            ) => {
                let rewind = fresh_before.is_some();
                let wait = rules.opening_wait(u64::from(g.wait)) as u8;
                let floor = rules.floor(u64::from(g.mark)) as u8;
                let held = Held {
                    node: g.node,
                    since: g.since,
                    mark: g.mark,
                    ceiling: g.ceiling,
                    granted: g.ceiling,
                    valid_until: rules.valid_until(u64::from(sent)) as u8,
                    waiting: None,
                    floor,
                    rewind,
                    expiry: g.since + spec.ttl,
                };
                if let Some(old) = holder.held.replace(held) {
                    // A rotation: the old node id goes back with its mark.
                    holder.orphan = Some((old.node, old.since, None));
                }
                holder.next_renewal = local + spec.renew_every;
                let held = holder.held.as_mut().expect("held");
                if wait == 0 {
                    holder.fence_until = held.valid_until;
                    let (node, valid) = (held.node, local < held.valid_until);
                    holder.seen_closed = false;
                    if valid {
                        opened(state, h, node, floor, rewind);
                    }
                } else {
                    held.waiting = Some(local + wait);
                    holder.fence_until = 0;
                }
            }
            (Request::Claim { fresh_before, .. }, _) => match fresh_before {
                Some(_) => holder.next_rotation = local + spec.renew_every,
                None => holder.next_claim = local + 1,
            },
            (Request::Renew { sent, ceiling }, Answer::Renewed(true)) => {
                let Some(held) = &mut holder.held else {
                    unreachable!("a renewal without a claim")
                };
                held.ceiling = ceiling;
                let from = rules.renewal_counts_from(u64::from(sent), u64::from(local)) as u8;
                let until = rules.valid_until(u64::from(from)) as u8;
                let extended = match held.waiting {
                    Some(_) => local < held.valid_until,
                    None => {
                        let extends =
                            rules.extends(u64::from(holder.fence_until), u64::from(local));
                        if extends {
                            holder.fence_until = holder.fence_until.max(until);
                        }
                        extends
                    }
                };
                if extended {
                    held.granted = ceiling;
                    held.valid_until = until;
                    holder.next_renewal = from + spec.renew_every;
                }
            }
            (Request::Renew { .. }, Answer::Renewed(false)) => {
                holder.fence_until = 0;
                if let Some(held) = &mut holder.held {
                    held.valid_until = 0;
                }
            }
            (Request::Renew { .. }, _) => {
                holder.next_renewal = holder.next_renewal.max(local + 1);
            }
            (Request::Release { .. }, _) => {}
        }
    }
}

/// Ghosts: holder `h`'s fence opens under a fresh grant on `node`.
fn opened(state: &mut State, h: usize, node: u8, floor: u8, rewind: bool) {
    let holder = &mut state.holders[h];
    holder.seen_closed = false;
    if rewind {
        holder.last = floor;
        state.rotated = true;
    }
    let issued = &mut state.issued[usize::from(node)];
    if issued.holder.is_some_and(|other| usize::from(other) != h) {
        state.took_over = true;
    }
    issued.before = issued.before.max(issued.latest);
    issued.latest = 0;
    issued.holder = Some(h as u8);
    if state.failed_over {
        state.opened_after_failover = true;
    }
}

impl Model for Lease {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let holder = Holder {
            held: None,
            fence_until: 0,
            out: None,
            orphan: None,
            next_renewal: 0,
            next_claim: 0,
            next_rotation: 0,
            last: 0,
            rolled: false,
            leapt: false,
            on_deposed: false,
            cut: false,
            stray: None,
            seen_closed: false,
        };
        vec![State {
            now: START,
            holders: vec![holder; self.holders.len()],
            store: Store::new(self.nodes, self.holders.len()),
            issued: vec![Issued::default(); self.nodes],
            stray_used: false,
            failed_over: false,
            faults: 0,
            double_open: false,
            past_expiry: false,
            order_broken: false,
            reopened: false,
            took_over: false,
            opened_after_failover: false,
            rotated: false,
        }]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        for (h, holder) in state.holders.iter().enumerate() {
            if holder.stray.is_some() {
                actions.push(Action::ApplyCopy(h as u8));
            }
            // Across a failover that loses writes, IDs stay in order while
            // the clocks agree within the safety margin (the crate's
            // guarantee): a history has clock steps or a failover.
            if self.holders[h].rollback > 0 && !holder.rolled && !state.failed_over {
                actions.push(Action::Rollback(h as u8));
            }
            if self.holders[h].leap > 0 && !holder.leapt && !state.failed_over {
                actions.push(Action::Leap(h as u8));
            }
            if !holder.cut && state.faults < self.faults {
                actions.push(Action::Cut(h as u8));
            }
        }
        if let Some(lagging) = &state.store.lagging {
            if *lagging != state.store.primary.data {
                actions.push(Action::Sync);
            }
            if self.failover
                && !state.holders.iter().any(|h| h.rolled || h.leapt)
                && state.store.may_fail_over(state.now, &self.ttls())
            {
                actions.push(Action::Failover);
            }
        }
        if state.now >= self.horizon {
            return;
        }
        // The fates each holder's request may meet, once its keeper has
        // stepped, within the history's faults.
        let mut stepped = state.clone();
        let mut choices: Vec<Vec<Fate>> = Vec::new();
        for h in 0..stepped.holders.len() {
            self.step(&mut stepped, h);
            let holder = &stepped.holders[h];
            choices.push(match holder.out {
                None => vec![Fate::Wait],
                Some(Out {
                    answer: Some(_), ..
                }) => vec![Fate::Wait, Fate::Answer],
                Some(_) if holder.cut => vec![Fate::Dropped],
                Some(Out { request, .. }) => {
                    let mut fates = vec![Fate::Answer, Fate::Wait, Fate::Late, Fate::Lost];
                    if matches!(request, Request::Renew { .. }) && !stepped.stray_used {
                        fates.push(Fate::Copied);
                    }
                    fates
                }
            });
        }
        let budget = self.faults.saturating_sub(state.faults);
        let mut combo = [Fate::Wait; MAX_HOLDERS];
        each(&choices, 0, budget, &mut combo, &mut |combo| {
            actions.push(Action::Tick(*combo))
        });
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut state = last.clone();
        match action {
            Action::Tick(fates) => {
                for h in 0..state.holders.len() {
                    self.step(&mut state, h);
                }
                for (h, &fate) in fates.iter().enumerate().take(state.holders.len()) {
                    if state.holders[h].out.is_some_and(|out| out.answer.is_none()) {
                        state.faults += cost(fate);
                    }
                    self.meet(&mut state, h, fate);
                }
                self.tick(&mut state);
            }
            Action::ApplyCopy(h) => {
                let h = usize::from(h);
                let (node, since, ceiling) = state.holders[h].stray.take().expect("a copy");
                let (now, who, plant) = (state.now, self.who(h), self.plant);
                let _ = store::renew(
                    &mut state.store.primary,
                    now,
                    who,
                    node,
                    since,
                    ceiling,
                    plant,
                );
                self.note_renewed(&mut state, h, On::Primary, node, since);
            }
            Action::Sync => state.store.sync(),
            Action::Failover => {
                state.store.fail_over();
                state.failed_over = true;
                // Holders already started talk to the old primary; one
                // that starts later asks the sentinels.
                for (h, holder) in state.holders.iter_mut().enumerate() {
                    holder.on_deposed = state.now > START + self.holders[h].joins;
                }
            }
            Action::Rollback(h) => state.holders[usize::from(h)].rolled = true,
            Action::Leap(h) => state.holders[usize::from(h)].leapt = true,
            Action::Cut(h) => {
                state.holders[usize::from(h)].cut = true;
                state.faults += 1;
            }
        }
        Some(state)
    }

    fn properties(&self) -> Vec<stateright::Property<Self>> {
        super::properties::all()
    }

    fn within_boundary(&self, state: &State) -> bool {
        state.now <= self.horizon
    }
}

impl Lease {
    /// Holder `h`'s request meets `fate`; an answer that arrives is taken
    /// in.
    fn meet(&self, state: &mut State, h: usize, fate: Fate) {
        let Some(out) = state.holders[h].out else {
            return;
        };
        let answer = match (out.answer, fate) {
            (_, Fate::Wait) => return,
            (Some(answer), _) => answer,
            (None, Fate::Dropped) => Answer::Failed,
            (None, fate) => {
                let answer = self.apply(state, h, out);
                if fate == Fate::Copied {
                    let Request::Renew { ceiling, .. } = out.request else {
                        unreachable!("only renewals are copied")
                    };
                    let held = state.holders[h].held.as_ref().expect("held");
                    state.holders[h].stray = Some((held.node, held.since, ceiling));
                    state.stray_used = true;
                }
                match fate {
                    Fate::Late => {
                        state.holders[h].out = Some(Out {
                            answer: Some(answer),
                            ..out
                        });
                        return;
                    }
                    Fate::Lost => Answer::Failed,
                    _ => answer,
                }
            }
        };
        state.holders[h].out = None;
        self.deliver(state, h, out.request, answer);
    }

    /// Every open fence's generator issues an ID at its timestamp (its
    /// wall clock, never back, after the floor, up to the ceiling); the
    /// ghosts record the hand-off order and fences seen closed.
    fn tick(&self, state: &mut State) {
        let open: Vec<Option<u8>> = (0..state.holders.len())
            .map(|h| self.open_node(state, h))
            .collect();
        for (h, node) in open.iter().enumerate() {
            if node.is_some() && open[h + 1..].contains(node) {
                state.double_open = true;
            }
            let expiry = state.holders[h].held.as_ref().map_or(0, |held| held.expiry);
            if node.is_some() && state.now >= expiry {
                state.past_expiry = true;
            }
        }
        for h in 0..state.holders.len() {
            let wall = self.wall(h, &state.holders[h], state.now);
            let open = self.open_node(state, h);
            let holder = &mut state.holders[h];
            let Some(held) = &holder.held else { continue };
            if held.waiting.is_some() {
                continue;
            }
            let Some(node) = open else {
                holder.seen_closed = true;
                continue;
            };
            if holder.seen_closed {
                state.reopened = true;
            }
            let tick = wall.max(holder.last).max(held.floor + 1);
            if tick > held.granted {
                continue;
            }
            holder.last = tick;
            let issued = &mut state.issued[usize::from(node)];
            if issued.holder == Some(h as u8) {
                if tick <= issued.before {
                    state.order_broken = true;
                }
                issued.latest = issued.latest.max(tick);
            } else {
                // An earlier grant issuing after a later one opened.
                issued.before = issued.before.max(tick);
            }
        }
        state.now += 1;
    }
}

/// What a fate costs of a history's faults, for a request not yet applied.
fn cost(fate: Fate) -> u8 {
    match fate {
        Fate::Answer | Fate::Dropped => 0,
        Fate::Wait | Fate::Late | Fate::Lost | Fate::Copied => 1,
    }
}

/// Calls `push` with every combination of the holders' fates whose cost
/// fits `budget`.
fn each(
    choices: &[Vec<Fate>],
    i: usize,
    budget: u8,
    combo: &mut [Fate; MAX_HOLDERS],
    push: &mut dyn FnMut(&[Fate; MAX_HOLDERS]),
) {
    if i == choices.len() {
        push(combo);
        return;
    }
    // A single choice is an answer already on its way or none: free.
    let free = choices[i].len() <= 2 && !choices[i].contains(&Fate::Late);
    for &fate in &choices[i] {
        let c = if free { 0 } else { cost(fate) };
        if c <= budget {
            combo[i] = fate;
            each(choices, i + 1, budget - c, combo, push);
        }
    }
}
