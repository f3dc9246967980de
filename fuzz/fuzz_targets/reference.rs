//! `Generator` and `MutexGenerator` against a reference model written from
//! the documented rules alone; see `src/reference.rs` for what is checked.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| flakeid_fuzz::reference::run(data));
