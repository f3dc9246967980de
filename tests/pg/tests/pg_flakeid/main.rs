//! pg_flakeid on real PostgreSQL servers (Debian's, started and stopped by
//! each test, with the extension in `shared_preload_libraries`): what its
//! SQL functions return, that 16 clients at once never share an ID, that a
//! crash restart with the clock set back and a promoted standby both go on
//! above every ID issued before, that a running server's IDs follow its
//! wall clock forward and never back, that bad settings are errors and never
//! crashes, and (`plants`, ignored unless a plant build is given) that
//! these tests catch the bugs planted in the extension on purpose.
//!
//! The extension must be installed first:
//! `cd pg && cargo pgrx install --release --pg-config /usr/lib/postgresql/15/bin/pg_config`.

mod concurrent;
mod crash;
mod functions;
mod lease;
mod plants;
mod promotion;
mod settings;
mod support;
mod wall_clock;
