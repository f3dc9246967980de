//! Arbitrary bytes build a layout (valid or not) and values, then check:
//! building never panics, invalid input gets a documented error, and
//! compose -> decode and Display -> FromStr round-trip exactly.
#![no_main]

use flakeid::{FieldError, Id, Layout, LayoutError, Parts};
use libfuzzer_sys::fuzz_target;

/// Reads little-endian integers off the input, zero when it runs out.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        let (first, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        *first
    }

    fn u64(&mut self) -> u64 {
        (0..8).fold(0, |v, i| v | u64::from(self.u8()) << (8 * i))
    }
}

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let mut builder = Layout::builder()
        .epoch_ms(b.u64() % 1_800_000_000_000)
        .unit_ms(u64::from(b.u8() % 12))
        .timestamp_bits(u32::from(b.u8() % 70));
    let fields = b.u8() % 6;
    for i in 0..fields {
        let bits = u32::from(b.u8() % 40);
        builder = match b.u8() % 8 {
            0 => builder.sequence(bits),
            1 => builder.clock_id(bits),
            2 => builder.node("", bits),
            3 => builder.node("dup", bits),
            _ => builder.node(format!("n{i}"), bits),
        };
    }
    let layout = match builder.build() {
        Ok(layout) => layout,
        Err(e) => {
            // Every refusal is one of the documented kinds and says something.
            assert!(!e.to_string().is_empty());
            assert!(matches!(
                e,
                LayoutError::Missing { .. }
                    | LayoutError::ZeroWidth { .. }
                    | LayoutError::TooWide { .. }
                    | LayoutError::DuplicateField { .. }
                    | LayoutError::EmptyName
                    | LayoutError::ZeroUnit
                    | LayoutError::EpochInFuture { .. }
                    | LayoutError::TimestampTooLong { .. }
            ));
            return;
        }
    };
    assert!(layout.total_bits() <= 64);
    let parts = Parts {
        timestamp: b.u64(),
        node: b.u64(),
        sequence: b.u64(),
        clock_id: b.u64(),
    };
    match layout.compose(parts) {
        Ok(id) => {
            let decoded = layout.decode(id).expect("a composed id decodes");
            assert_eq!(decoded.parts(), parts);
            assert_eq!(id.to_string().parse::<Id>(), Ok(id));
            assert_eq!(layout.timestamp_at(decoded.unix_ms()), Ok(parts.timestamp));
        }
        Err(e) => assert!(matches!(
            e,
            FieldError::OutOfRange { .. } | FieldError::NoSuchField { .. }
        )),
    }
    // Any u64: either it decodes and composes back to itself, or it sets
    // bits the layout does not use.
    let raw = Id::from_u64(b.u64());
    match layout.decode(raw) {
        Ok(decoded) => assert_eq!(layout.compose(decoded.parts()), Ok(raw)),
        Err(e) => assert!(matches!(e, FieldError::UnusedBitsSet { .. })),
    }
});
