//! loom models of flakeid's generators live in `tests/`; this library is empty.
//!
//! Run them with:
//!
//! ```text
//! RUSTFLAGS="--cfg flakeid_loom" LOOM_MAX_PREEMPTIONS=2 \
//!     cargo test -p flakeid-loom-tests --release --target-dir target/loom
//! ```
