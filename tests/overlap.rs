//! `Layout::first_shared_id` against brute force: on small layouts (at most
//! 12 bits, every field order, epochs and units of their own), every ID is
//! tried with both layouts, and the lowest that both can issue must be the
//! one the bitwise search finds.

use std::time::{Duration, UNIX_EPOCH};

use flakeid::{Id, Layout};
use flakeid_test_servers::Rng;

/// A random layout of at most 12 bits: the timestamp on top, then up to two
/// node fields, the sequence and perhaps a clock id in a random order.
fn small_layout(rng: &mut Rng) -> Layout {
    let mut rest: Vec<(u8, u32)> = Vec::new();
    for kind in 0..rng.below(3) {
        rest.push((kind as u8, rng.between(1, 3) as u32)); // node fields 0, 1
    }
    rest.push((2, rng.between(1, 2) as u32)); // sequence
    if rng.one_in(3) {
        rest.push((3, 1)); // clock id
    }
    for i in (1..rest.len()).rev() {
        rest.swap(i, rng.index(i + 1));
    }
    let used: u32 = rest.iter().map(|(_, bits)| bits).sum();
    let mut builder = Layout::builder()
        .epoch_ms(rng.between(1_000, 1_040))
        .unit_ms(rng.between(1, 3))
        .timestamp_bits(rng.between(1, u64::from(12 - used).min(5)) as u32);
    for (kind, bits) in rest {
        builder = match kind {
            0 => builder.node("high", bits),
            1 => builder.node("low", bits),
            2 => builder.sequence(bits),
            _ => builder.clock_id(bits),
        };
    }
    builder.build().expect("a valid small layout")
}

/// Whether a generator on `layout` with a node id in `nodes` can issue `id`
/// at or after `from_ms`.
fn issues(layout: &Layout, nodes: (u64, u64), from_ms: u64, id: u64) -> bool {
    if from_ms > layout.last_ms() {
        return false;
    }
    let Ok(decoded) = layout.decode(Id::from_u64(id)) else {
        return false; // bits above the layout's
    };
    let lowest = layout.timestamp_at(from_ms).unwrap_or(0);
    (nodes.0..=nodes.1).contains(&decoded.node_id()) && decoded.timestamp() >= lowest
}

#[test]
fn the_lowest_shared_id_is_the_one_brute_force_finds() {
    let mut rng = Rng::from_env_or_time("FLAKEID_TEST_SEED");
    let (mut met, mut apart) = (0, 0);
    for _ in 0..3_000 {
        let (a, b) = (small_layout(&mut rng), small_layout(&mut rng));
        let range = |rng: &mut Rng, layout: &Layout| {
            let first = rng.below(layout.max_node_id() + 2);
            (first, first + rng.below(3))
        };
        let (nodes_a, nodes_b) = (range(&mut rng, &a), range(&mut rng, &b));
        let from_ms = rng.between(990, 1_200);
        let expected = (0..1u64 << 12)
            .find(|&id| issues(&a, nodes_a, from_ms, id) && issues(&b, nodes_b, from_ms, id));
        let from = UNIX_EPOCH + Duration::from_millis(from_ms);
        let found = a
            .first_shared_id(nodes_a.0..=nodes_a.1, &b, nodes_b.0..=nodes_b.1, from)
            .map(Id::to_u64);
        assert_eq!(
            found, expected,
            "{a} nodes {nodes_a:?} and {b} nodes {nodes_b:?} from {from_ms} ms"
        );
        // The same answer with the two sides swapped.
        let swapped = b
            .first_shared_id(nodes_b.0..=nodes_b.1, &a, nodes_a.0..=nodes_a.1, from)
            .map(Id::to_u64);
        assert_eq!(swapped, expected);
        if expected.is_some() {
            met += 1
        } else {
            apart += 1
        }
    }
    // Both answers were drawn often enough to mean something (about 7% of
    // the pairs meet).
    assert!(met > 100 && apart > 100, "met {met}, apart {apart}");
}

/// Twitter's node 4 and a 41 + 8 + 14 layout's node 1, on one epoch, both
/// set bit 14 only: the same IDs in the same millisecond.
#[test]
fn twitter_node_4_meets_a_wide_sequence_layouts_node_1() {
    let twitter = Layout::twitter();
    let wide: Layout = format!(
        "epoch={} fields=timestamp:41,node:8,sequence:14",
        twitter.epoch_ms()
    )
    .parse()
    .unwrap();
    let from = UNIX_EPOCH + Duration::from_millis(1_800_000_000_000);
    let shared = twitter.first_shared_id(4..=4, &wide, 1..=1, from).unwrap();
    let (t, w) = (
        twitter.decode(shared).unwrap(),
        wide.decode(shared).unwrap(),
    );
    assert_eq!((t.node_id(), w.node_id()), (4, 1));
    assert_eq!(t.unix_ms(), w.unix_ms()); // one millisecond
    assert_eq!(
        shared.to_u64(),
        twitter.first_id_at(from).unwrap().to_u64() | 1 << 14
    );
    // Node 1 on the wide layout never meets twitter's node 8 (bit 15).
    assert_eq!(twitter.first_shared_id(8..=8, &wide, 1..=1, from), None);
}
