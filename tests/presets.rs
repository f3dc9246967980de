//! Every preset reproduces its published format: decoding documented IDs and
//! composing them back.

use flakeid::{Id, Layout, Parts};

#[test]
fn discord_documents_its_own_example() {
    // https://discord.com/developers/docs/reference#snowflakes
    let layout = Layout::discord();
    let id: Id = "175928847299117063".parse().unwrap();
    let d = layout.decode(id).unwrap();
    assert_eq!(d.unix_ms(), 1_462_015_105_796);
    assert_eq!(
        d.to_string(),
        "2016-04-30T11:18:25.796Z worker=1 process=0 sequence=7"
    );
    assert_eq!(
        (d.field("worker"), d.field("process"), d.sequence()),
        (Some(1), Some(0), 7)
    );
    assert_eq!(layout.compose(d.parts()).unwrap(), id);
}

#[test]
fn twitter_decodes_the_tweet_in_its_api_docs() {
    // Tweet 1050118621198921728, "created_at": "Wed Oct 10 20:19:24 +0000 2018".
    let layout = Layout::twitter();
    let d = layout
        .decode(Id::from_u64(1_050_118_621_198_921_728))
        .unwrap();
    assert_eq!(d.unix_ms() / 1000, 1_539_202_764);
    assert_eq!(
        d.to_string(),
        "2018-10-10T20:19:24.211Z datacenter=10 worker=27 sequence=0"
    );
}

#[test]
fn instagram_matches_its_worked_example() {
    // "Sharding & IDs at Instagram": 1387263000 ms since the epoch, shard 1341,
    // sequence 5001 % 1024, epoch 2011-01-01.
    let layout = Layout::instagram(1_293_840_000_000).unwrap();
    let expected = (1_387_263_000_u64 << 23) | (1341 << 10) | (5001 % 1024);
    let id = layout
        .compose(Parts {
            timestamp: 1_387_263_000,
            node: 1341,
            sequence: 5001 % 1024,
            clock_id: 0,
        })
        .unwrap();
    assert_eq!(id.to_u64(), expected);
    let d = layout.decode(id).unwrap();
    assert_eq!(d.unix_ms(), 1_293_840_000_000 + 1_387_263_000);
    assert_eq!(d.field("shard"), Some(1341));
}

#[test]
fn sonyflake_puts_the_sequence_above_the_machine_id() {
    let layout = Layout::sonyflake();
    let id = layout
        .compose(Parts {
            timestamp: 1,
            node: 3,
            sequence: 2,
            clock_id: 0,
        })
        .unwrap();
    assert_eq!(id.to_u64(), 1 << 24 | 2 << 16 | 3);
    let d = layout.decode(id).unwrap();
    // One 10 ms unit after 2014-09-01T00:00:00Z.
    assert_eq!(
        d.to_string(),
        "2014-09-01T00:00:00.010Z sequence=2 machine=3"
    );
}

#[test]
fn js_safe_preset_stays_below_2_pow_53_for_its_whole_life() {
    let layout = Layout::js_safe();
    let last = layout
        .compose(Parts {
            timestamp: (1 << layout.timestamp_bits()) - 1,
            node: layout.max_node_id(),
            sequence: layout.capacity_per_tick() - 1,
            clock_id: 0,
        })
        .unwrap();
    assert_eq!(last.to_u64(), (1u64 << 53) - 1);
    assert_eq!(layout.capacity_per_tick() * 1000, 64_000);
    assert_eq!(layout.max_node_id(), 63);
}

#[test]
fn every_preset_round_trips_extreme_parts() {
    let presets = [
        Layout::twitter(),
        Layout::discord(),
        Layout::instagram(1_314_220_021_721).unwrap(),
        Layout::sonyflake(),
        Layout::js_safe(),
    ];
    for layout in presets {
        for (ts, node, seq) in [
            (0, 0, 0),
            (
                (1 << layout.timestamp_bits()) - 1,
                layout.max_node_id(),
                layout.capacity_per_tick() - 1,
            ),
            (12345, layout.max_node_id() / 3, 1),
        ] {
            let parts = Parts {
                timestamp: ts,
                node,
                sequence: seq,
                clock_id: 0,
            };
            let id = layout.compose(parts).unwrap();
            assert_eq!(layout.decode(id).unwrap().parts(), parts, "{layout:?}");
            assert_eq!(id.to_string().parse::<Id>().unwrap(), id);
        }
        // Signed range: the last signed instant's IDs fit an i64.
        let ts = layout.timestamp_at(layout.last_signed_ms()).unwrap();
        let id = layout
            .compose(Parts {
                timestamp: ts,
                node: layout.max_node_id(),
                sequence: layout.capacity_per_tick() - 1,
                clock_id: 0,
            })
            .unwrap();
        assert!(id.to_i64().is_some(), "{layout:?}");
    }
}

#[test]
fn the_seed_systems_are_expressible() {
    // Resource-id worker, first form: time + region 6 + resource type 14 +
    // machine 2 + sequence 3.
    let first = Layout::builder()
        .epoch_ms(1_500_000_000_000)
        .timestamp_bits(38)
        .node("region", 6)
        .node("resource_type", 14)
        .node("machine", 2)
        .sequence(3)
        .build()
        .unwrap();
    assert_eq!(first.total_bits(), 63);
    let node = first
        .node_id_from_fields([("region", 63), ("resource_type", 9000), ("machine", 2)])
        .unwrap();
    let d = first
        .decode(
            first
                .compose(Parts {
                    timestamp: 99,
                    node,
                    sequence: 5,
                    clock_id: 0,
                })
                .unwrap(),
        )
        .unwrap();
    assert_eq!(
        d.node_fields().collect::<Vec<_>>(),
        [("region", 63), ("resource_type", 9000), ("machine", 2)]
    );
    // Multi-clock: 41 ms + 4 clock id + 8 machine + 10 sequence.
    let multi = Layout::builder()
        .epoch_ms(1_500_000_000_000)
        .timestamp_bits(41)
        .clock_id(4)
        .node("machine", 8)
        .sequence(10)
        .build()
        .unwrap();
    let id = multi
        .compose(Parts {
            timestamp: 7,
            node: 200,
            sequence: 9,
            clock_id: 15,
        })
        .unwrap();
    assert_eq!(id.to_u64(), 7 << 22 | 15 << 18 | 200 << 10 | 9);
    assert_eq!(multi.decode(id).unwrap().clock_id(), 15);
    // Go generator: 41 ms + 10 machine + 12 sequence.
    let go = Layout::builder()
        .epoch_ms(1_500_000_000_000)
        .timestamp_bits(41)
        .node("machine", 10)
        .sequence(12)
        .build()
        .unwrap();
    assert_eq!(go.max_node_id(), 1023);
}
