//! Arbitrary keys, widths and values through `PublicIds`: the width is
//! accepted exactly for 32..=64 bits; inside the domain both directions
//! round-trip exactly and stay inside it, distinct values get distinct
//! public ids; outside it both directions refuse with `OutOfRange`.
#![no_main]

use flakeid::{Id, PublicIdError, PublicIds};
use libfuzzer_sys::fuzz_target;

#[path = "common/bytes.rs"]
mod bytes;
use bytes::Bytes;

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let key: [u8; 16] = std::array::from_fn(|_| b.u8());
    let bits = u32::from(b.u8());
    let public_ids = match PublicIds::with_bits(key, bits) {
        Ok(p) => p,
        Err(e) => {
            assert!(!(32..=64).contains(&bits), "{bits} bits refused: {e}");
            assert_eq!(e, PublicIdError::UnsupportedWidth { bits });
            return;
        }
    };
    assert!((32..=64).contains(&bits));
    let top = if bits == 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    };
    let (x, y) = (b.u64(), b.u64());
    for v in [x, y, x & top, y & top] {
        let id = Id::from_u64(v);
        if v > top {
            let err = PublicIdError::OutOfRange { id: v, bits };
            assert_eq!(public_ids.to_public(id), Err(err.clone()));
            assert_eq!(public_ids.from_public(id), Err(err));
            continue;
        }
        let public = public_ids.to_public(id).expect("in the domain");
        assert!(
            public.to_u64() <= top,
            "{v} -> {public:?} leaves {bits} bits"
        );
        assert_eq!(public_ids.from_public(public), Ok(id));
        let back = public_ids.from_public(id).expect("in the domain");
        assert!(back.to_u64() <= top);
        assert_eq!(public_ids.to_public(back), Ok(id));
    }
    let (x, y) = (x & top, y & top);
    if x != y {
        assert_ne!(
            public_ids.to_public(Id::from_u64(x)),
            public_ids.to_public(Id::from_u64(y))
        );
    }
});
