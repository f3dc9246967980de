//! Whether two generators can issue one same ID: decided from the bits.
//!
//! A generator on a layout, with a node id in a range, can issue exactly the
//! IDs whose unused bits are 0, whose node fields spell a node id in the
//! range, and whose timestamp is at or after the tick it started in; its
//! sequence and clock-id bits take any value. Each of those is a condition on
//! bits read from the highest down (a node id's fields sit in the ID in the
//! order they make up the node id), so the lowest ID both can issue is found
//! one bit at a time, as digit dynamic programming: the state is, per bound,
//! whether the bits so far still equal the bound's.

use std::ops::RangeInclusive;
use std::time::SystemTime;

use super::{FieldKind, Layout};
use crate::id::Id;

impl Layout {
    /// The lowest ID that a generator on this layout, with a node id in
    /// `nodes`, and one on `other`, with a node id in `other_nodes`, can both
    /// issue at or after `from`; `None` if they never can, so the two may run
    /// side by side.
    ///
    /// It reads only bit positions, epochs, units and node values, never the
    /// fields' names: a node field of one layout may overlap the other's
    /// timestamp or sequence, and two layouts with one bit plan but other
    /// epochs still meet (the one behind reaches the other's IDs later).
    /// Node ids past a layout's largest are ignored; a layout whose lifetime
    /// ends before `from` issues nothing.
    ///
    /// ```
    /// use std::time::{Duration, UNIX_EPOCH};
    /// use flakeid::Layout;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let twitter = Layout::twitter();
    /// let wide = Layout::builder()
    ///     .epoch_ms(twitter.epoch_ms())
    ///     .timestamp_bits(41)
    ///     .node("node", 8)
    ///     .sequence(14)
    ///     .build()?;
    /// let from = UNIX_EPOCH + Duration::from_millis(1_800_000_000_000);
    /// // Twitter's node 4 and the wide layout's node 1 both set bit 14 only.
    /// let shared = twitter.first_shared_id(4..=4, &wide, 1..=1, from).ok_or("no shared id")?;
    /// assert_eq!(twitter.decode(shared)?.node_id(), 4);
    /// assert_eq!(wide.decode(shared)?.node_id(), 1);
    /// // Distinct node ids on one bit plan never meet.
    /// assert_eq!(twitter.first_shared_id(4..=4, &twitter, 5..=5, from), None);
    /// # Ok(())
    /// # }
    /// ```
    pub fn first_shared_id(
        &self,
        nodes: RangeInclusive<u64>,
        other: &Layout,
        other_nodes: RangeInclusive<u64>,
        from: SystemTime,
    ) -> Option<Id> {
        let from_ms = crate::clock::unix_ms(from).unwrap_or(0);
        let a = Reach::new(self, nodes, from_ms)?;
        let b = Reach::new(other, other_nodes, from_ms)?;
        lowest(&[a, b]).map(Id::from_u64)
    }
}

/// What a bit of an ID is to one layout.
#[derive(Clone, Copy)]
enum Role {
    /// Above the layout's fields: always 0.
    Zero,
    /// Bit `k` of the timestamp.
    Timestamp(u32),
    /// Bit `k` of the node id.
    Node(u32),
    /// Sequence or clock id: any value.
    Free,
}

/// The IDs one generator can issue, as conditions on their bits.
struct Reach {
    roles: [Role; 64],
    /// The lowest timestamp it issues.
    timestamp_min: u64,
    nodes: (u64, u64),
}

impl Reach {
    fn new(layout: &Layout, nodes: RangeInclusive<u64>, from_ms: u64) -> Option<Reach> {
        let (first, last) = nodes.into_inner();
        let last = last.min(layout.max_node_id());
        if first > last || from_ms > layout.last_ms() {
            return None;
        }
        let timestamp_min = layout.timestamp_at(from_ms).unwrap_or(0);
        let mut roles = [Role::Zero; 64];
        // Node fields from the lowest: their bits make up the node id from
        // its lowest bit.
        let mut node_bit = 0;
        for field in layout.fields().iter().rev() {
            for bit in 0..field.bits() {
                let role = match field.kind() {
                    FieldKind::Timestamp => Role::Timestamp(bit),
                    FieldKind::Node => {
                        node_bit += 1;
                        Role::Node(node_bit - 1)
                    }
                    FieldKind::Sequence | FieldKind::ClockId => Role::Free,
                };
                roles[(field.shift() + bit) as usize] = role;
            }
        }
        Some(Reach {
            roles,
            timestamp_min,
            nodes: (first, last),
        })
    }

    /// Sets bit `at` of an ID to `value` in the state of this reach's three
    /// bounds (bits 0–2 of `state`: the timestamp still equals its lowest,
    /// the node id its first, the node id its last); `None` if that breaks
    /// a bound or a zero bit.
    fn step(&self, at: usize, value: u64, state: u8) -> Option<u8> {
        let mut state = state;
        match self.roles[at] {
            Role::Zero if value == 1 => return None,
            Role::Zero | Role::Free => {}
            Role::Timestamp(k) => at_least(&mut state, 0, value, self.timestamp_min >> k & 1)?,
            Role::Node(k) => {
                at_least(&mut state, 1, value, self.nodes.0 >> k & 1)?;
                // At most the last: the same with the bits flipped.
                at_least(&mut state, 2, value ^ 1, (self.nodes.1 >> k & 1) ^ 1)?;
            }
        }
        Some(state)
    }
}

/// One bit of a number that must be at least a bound, read from the top:
/// while the bits so far equal the bound's (flag `flag` set), a lower bit
/// fails and a higher one settles it.
fn at_least(state: &mut u8, flag: u8, value: u64, bound: u64) -> Option<()> {
    if *state & 1 << flag != 0 {
        if value < bound {
            return None;
        }
        if value > bound {
            *state &= !(1 << flag);
        }
    }
    Some(())
}

/// The lowest ID every reach issues, if any.
fn lowest(reaches: &[Reach; 2]) -> Option<u64> {
    const TIGHT: u8 = 0b111;
    let step = |at: usize, value: u64, state: u8| -> Option<u8> {
        let a = reaches[0].step(at, value, state & TIGHT)?;
        let b = reaches[1].step(at, value, state >> 3)?;
        Some(a | b << 3)
    };
    // done[at][state]: bits `at - 1` down to 0 can be chosen from `state`.
    let mut done = [[false; 64]; 65];
    done[0] = [true; 64];
    for at in 0..64 {
        for state in 0..64u8 {
            done[at + 1][state as usize] =
                (0..=1).any(|value| step(at, value, state).is_some_and(|s| done[at][s as usize]));
        }
    }
    let mut state = TIGHT | TIGHT << 3;
    if !done[64][state as usize] {
        return None;
    }
    let mut id = 0;
    for at in (0..64).rev() {
        // The lower value first, so the ID found is the lowest.
        let (value, next) = (0..=1)
            .find_map(|value| {
                step(at, value, state)
                    .filter(|s| done[at][*s as usize])
                    .map(|s| (value, s))
            })
            .expect("a state marked done has a way down");
        id |= value << at;
        state = next;
    }
    Some(id)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    fn at(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(ms)
    }

    #[test]
    fn one_layout_meets_only_on_one_node_id() {
        let twitter = Layout::twitter();
        let from = at(1_800_000_000_000);
        let first = twitter.first_id_at(from).unwrap().to_u64();
        let shared = twitter
            .first_shared_id(37..=37, &twitter, 37..=37, from)
            .unwrap();
        assert_eq!(shared.to_u64(), first | 37 << 12);
        assert_eq!(twitter.first_shared_id(0..=3, &twitter, 4..=9, from), None);
        assert_eq!(
            twitter
                .first_shared_id(0..=4, &twitter, 4..=9, from)
                .map(|id| twitter.decode(id).unwrap().node_id()),
            Some(4)
        );
    }

    #[test]
    fn a_node_field_under_the_other_timestamp_meets_it_later() {
        // B's timestamp runs over A's node bits: some tick sets them to A's
        // node id, whatever the node ids.
        let epoch = 1_600_000_000_000;
        let a = Layout::builder()
            .epoch_ms(epoch)
            .timestamp_bits(41)
            .node("worker", 10)
            .sequence(12)
            .build()
            .unwrap();
        let b = Layout::builder()
            .epoch_ms(epoch)
            .timestamp_bits(51)
            .node("shard", 2)
            .sequence(10)
            .build()
            .unwrap();
        let from = at(epoch + 5_000);
        let shared = a.first_shared_id(1_000..=1_000, &b, 3..=3, from).unwrap();
        assert_eq!(a.decode(shared).unwrap().node_id(), 1_000);
        assert_eq!(b.decode(shared).unwrap().node_id(), 3);
        assert!(a.decode(shared).unwrap().timestamp() >= 5_000);
        assert!(b.decode(shared).unwrap().timestamp() >= 5_000);
    }

    #[test]
    fn empty_ranges_and_ended_layouts_meet_nothing() {
        let twitter = Layout::twitter();
        let from = at(1_800_000_000_000);
        let empty = RangeInclusive::new(5, 4);
        assert_eq!(twitter.first_shared_id(empty, &twitter, 0..=9, from), None);
        // Past the largest node id.
        assert_eq!(
            twitter.first_shared_id(1_024..=2_000, &twitter, 0..=u64::MAX, from),
            None
        );
        let after = at(twitter.last_ms() + 1);
        assert_eq!(twitter.first_shared_id(1..=1, &twitter, 1..=1, after), None);
    }
}
