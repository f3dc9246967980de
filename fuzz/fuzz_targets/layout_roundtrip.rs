//! Arbitrary bytes build a layout (valid or not) and values, then check:
//! building never panics; it fails exactly when the input breaks a
//! documented rule (field names included: any name of up to 35 Latin-1
//! characters is tried), with an error that names a rule the input breaks
//! (with the right field, widths and values); compose -> decode, decode ->
//! compose, time <-> timestamp, an ID's Display -> FromStr and a layout's
//! spec (Display -> FromStr) round-trip exactly; the input read as a layout
//! spec never panics, and a spec that reads writes itself back to the same
//! layout; a composed ID lies in its tick's `first_id_at..=last_id_at`;
//! a decoded ID's `Display` shows its date and time (checked against an
//! independent calendar) and every field.
#![no_main]

use std::time::{SystemTime, UNIX_EPOCH};

use flakeid::{FieldError, FieldKind, Id, Layout, LayoutError, Parts};
use libfuzzer_sys::fuzz_target;

#[path = "common/bytes.rs"]
mod bytes;
use bytes::Bytes;

/// Every rule the input breaks, worked out independently of the builder.
fn broken_rules(
    epoch_ms: u64,
    unit_ms: u64,
    fields: &[(String, FieldKind, u32)],
    now_ms: u64,
) -> Vec<LayoutError> {
    let mut broken = Vec::new();
    if !fields.iter().any(|f| f.1 == FieldKind::Sequence) {
        broken.push(LayoutError::Missing { what: "sequence" });
    }
    for (i, (name, kind, bits)) in fields.iter().enumerate() {
        if name.is_empty() {
            broken.push(LayoutError::EmptyName);
        }
        // Names: 1 to 32 ASCII letters, digits, `_` or `-`; a node field
        // must not take another kind's name.
        if name.len() > 32 {
            broken.push(LayoutError::NameTooLong {
                field: name.clone(),
                len: name.len(),
                max: 32,
            });
        }
        let allowed = |c: char| matches!(c, 'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-');
        if let Some(character) = name.chars().find(|&c| !allowed(c)) {
            broken.push(LayoutError::BadNameCharacter {
                field: name.clone(),
                character,
            });
        }
        if *kind == FieldKind::Node && ["timestamp", "sequence", "clock_id"].contains(&&**name) {
            broken.push(LayoutError::ReservedName {
                field: name.clone(),
            });
        }
        if *bits == 0 {
            broken.push(LayoutError::ZeroWidth {
                field: name.clone(),
            });
        }
        if fields[..i].iter().any(|(other, _, _)| other == name) {
            broken.push(LayoutError::DuplicateField {
                field: name.clone(),
            });
        }
    }
    let total: u32 = fields.iter().map(|f| f.2).sum();
    if total > 64 {
        broken.push(LayoutError::TooWide { bits: total });
    }
    if unit_ms == 0 {
        broken.push(LayoutError::ZeroUnit);
    }
    let ts_bits = fields[0].2;
    let end = (1u128 << ts_bits)
        .checked_mul(u128::from(unit_ms))
        .and_then(|span| span.checked_add(u128::from(epoch_ms)));
    if end.is_none_or(|end| end > u128::from(u64::MAX)) {
        broken.push(LayoutError::TimestampTooLong {
            bits: ts_bits,
            unit_ms,
        });
    }
    if epoch_ms > now_ms {
        broken.push(LayoutError::EpochInFuture { epoch_ms, now_ms });
    }
    broken
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`): the inverse of what `Display` must have done.
fn days_from_civil(y: u64, m: u64, d: u64) -> u64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(layout) = text.parse::<Layout>()
    {
        let spec = layout.to_string();
        assert_eq!(
            spec.parse::<Layout>().as_ref(),
            Ok(&layout),
            "{text:?} -> {spec}"
        );
    }
    let mut b = Bytes(data);
    let epoch_ms = b.u64() % 1_800_000_000_000;
    let unit_ms = match b.u8() {
        0..=200 => u64::from(b.u8() % 12),
        _ => b.u64(),
    };
    let ts_bits = u32::from(b.u8() % 70);
    let mut builder = Layout::builder()
        .epoch_ms(epoch_ms)
        .unit_ms(unit_ms)
        .timestamp_bits(ts_bits);
    let mut fields = vec![("timestamp".to_string(), FieldKind::Timestamp, ts_bits)];
    for i in 0..b.u8() % 6 {
        let bits = u32::from(b.u8() % 40);
        let (name, kind) = match b.u8() % 10 {
            0 => ("sequence".to_string(), FieldKind::Sequence),
            1 => ("clock_id".to_string(), FieldKind::ClockId),
            2 => (String::new(), FieldKind::Node),
            3 => ("dup".to_string(), FieldKind::Node),
            4 => ("timestamp".to_string(), FieldKind::Node),
            5 => ("sequence".to_string(), FieldKind::Node),
            // Any name: up to 35 characters from the first 256 code points.
            6 => (
                (0..b.u8() % 36).map(|_| char::from(b.u8())).collect(),
                FieldKind::Node,
            ),
            _ => (format!("n{i}"), FieldKind::Node),
        };
        builder = match kind {
            FieldKind::Sequence => builder.sequence(bits),
            FieldKind::ClockId => builder.clock_id(bits),
            _ => builder.node(name.clone(), bits),
        };
        fields.push((name, kind, bits));
    }
    let before = wall_ms();
    let built = builder.build();
    let after = wall_ms();
    let broken = broken_rules(epoch_ms, unit_ms, &fields, before);
    // The wall clock moved while building; an epoch in between may go either way.
    let borderline = (before..=after).contains(&epoch_ms)
        && broken
            .iter()
            .all(|e| matches!(e, LayoutError::EpochInFuture { .. }));
    let layout = match built {
        Ok(layout) => {
            assert!(broken.is_empty() || borderline, "built despite {broken:?}");
            layout
        }
        Err(e) => {
            assert!(!e.to_string().is_empty());
            let named = broken.iter().any(|rule| match (rule, &e) {
                (
                    LayoutError::EpochInFuture { epoch_ms: a, .. },
                    LayoutError::EpochInFuture {
                        epoch_ms: b,
                        now_ms,
                    },
                ) => a == b && (before..=after).contains(now_ms),
                _ => *rule == e,
            });
            assert!(named, "refused with {e:?}, but the input breaks {broken:?}");
            return;
        }
    };
    assert!(layout.total_bits() <= 64);
    assert_eq!(layout.total_bits(), fields.iter().map(|f| f.2).sum::<u32>());
    let spec = layout.to_string();
    assert_eq!(spec.parse::<Layout>().as_ref(), Ok(&layout), "{spec}");
    let parts = Parts {
        timestamp: b.u64(),
        node: b.u64(),
        sequence: b.u64(),
        clock_id: b.u64(),
    };
    match layout.compose(parts) {
        Ok(id) => {
            assert!(layout.total_bits() == 64 || id.to_u64() >> layout.total_bits() == 0);
            let decoded = layout.decode(id).expect("a composed id decodes");
            assert_eq!(decoded.parts(), parts);
            assert_eq!(id.to_string().parse::<Id>(), Ok(id));
            let tick = decoded.system_time();
            let (first, last) = (layout.first_id_at(tick), layout.last_id_at(tick));
            assert!(first.as_ref().is_ok_and(|&f| f <= id), "{first:?} > {id:?}");
            assert!(last.as_ref().is_ok_and(|&l| id <= l), "{last:?} < {id:?}");
            assert_eq!(layout.timestamp_at(decoded.unix_ms()), Ok(parts.timestamp));
            let node_fields: Vec<(String, u64)> = decoded
                .node_fields()
                .map(|(name, value)| (name.to_string(), value))
                .collect();
            let fields_ref = node_fields.iter().map(|(n, v)| (n.as_str(), *v));
            assert_eq!(layout.node_id_from_fields(fields_ref), Ok(parts.node));

            // Display: `YYYY-MM-DDTHH:MM:SS.mmmZ name=value ...`, every field
            // below the timestamp in order.
            let shown = decoded.to_string();
            let mut words = shown.split(' ');
            let when = words.next().unwrap();
            let (date, time) = when.split_once('T').unwrap();
            let ymd: Vec<u64> = date.split('-').map(|x| x.parse().unwrap()).collect();
            let hms: Vec<u64> = time
                .strip_suffix('Z')
                .unwrap()
                .split([':', '.'])
                .map(|x| x.parse().unwrap())
                .collect();
            let ms = decoded.unix_ms();
            assert_eq!(
                days_from_civil(ymd[0], ymd[1], ymd[2]),
                ms / 86_400_000,
                "{when}"
            );
            let in_day = ((hms[0] * 60 + hms[1]) * 60 + hms[2]) * 1000 + hms[3];
            assert_eq!(in_day, ms % 86_400_000, "{when}");
            for (field, word) in layout.fields()[1..].iter().zip(words.by_ref()) {
                let value = match field.name() {
                    "sequence" => decoded.sequence(),
                    "clock_id" => decoded.clock_id(),
                    name => decoded.field(name).unwrap(),
                };
                assert_eq!(word, format!("{}={value}", field.name()));
            }
            assert_eq!(words.next(), None);
        }
        Err(e) => {
            assert!(!e.to_string().is_empty());
            match e {
                FieldError::OutOfRange { field, value, max } => {
                    let (given, limit) = match field.as_str() {
                        "timestamp" => (parts.timestamp, layout.fields()[0].max()),
                        "node" => (parts.node, layout.max_node_id()),
                        "sequence" => (parts.sequence, layout.capacity_per_tick() - 1),
                        "clock_id" => (parts.clock_id, layout.max_clock_id()),
                        other => panic!("compose named {other:?}"),
                    };
                    assert_eq!((value, max), (given, limit));
                    assert!(value > max);
                }
                FieldError::NoSuchField { field } => {
                    assert_eq!(field, "clock_id");
                    assert!(layout.clock_id_bits() == 0 && parts.clock_id != 0);
                }
                other => panic!("compose refused with {other:?}"),
            }
        }
    }
    // Any u64: either it decodes and composes back to itself, or it sets
    // bits the layout does not use.
    let raw = Id::from_u64(b.u64());
    match layout.decode(raw) {
        Ok(decoded) => assert_eq!(layout.compose(decoded.parts()), Ok(raw)),
        Err(e) => {
            assert!(layout.total_bits() < 64 && raw.to_u64() >> layout.total_bits() != 0);
            assert_eq!(
                e,
                FieldError::UnusedBitsSet {
                    id: raw.to_u64(),
                    layout_bits: layout.total_bits()
                }
            );
        }
    }
});
