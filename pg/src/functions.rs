//! The SQL functions. Each doc comment is the function's SQL comment, which
//! `\df+` shows.

use std::time::{Duration, UNIX_EPOCH};

use flakeid::{Decoded, Id, IdFormat};
use pgrx::datum::{JsonB, TimestampWithTimeZone};
use pgrx::prelude::*;

use crate::settings::{self, raise};
use crate::shared;

/// Microseconds between the Unix epoch and PostgreSQL's (2000-01-01).
const PG_EPOCH_OFFSET_US: i64 = 946_684_800_000_000;

fn to_id(id: i64) -> Id {
    match Id::try_from(id) {
        Ok(id) => id,
        Err(e) => raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("{id} is not a flakeid ID: {e}"),
            "flakeid IDs are non-negative bigints",
        ),
    }
}

/// `id` read through `flakeid.layout`, or an error saying why it cannot be.
fn decode(id: i64) -> Decoded<'static> {
    match settings::layout().decode(to_id(id)) {
        Ok(decoded) => decoded,
        Err(e) => raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("{id} is not an ID of flakeid.layout: {e}"),
            "",
        ),
    }
}

fn timestamptz_of_ms(ms: u64) -> TimestampWithTimeZone {
    let us = (ms as i64).saturating_mul(1000) - PG_EPOCH_OFFSET_US;
    TimestampWithTimeZone::try_from(us).unwrap_or_else(|e| {
        raise(
            PgSqlErrorCode::ERRCODE_DATETIME_FIELD_OVERFLOW,
            format!("Unix ms {ms} is out of timestamptz's range: {e:?}"),
            "",
        )
    })
}

/// The next ID from this server's generator: use it as a column default,
/// `id bigint DEFAULT flakeid_next_id()`. Needs pg_flakeid in
/// shared_preload_libraries and flakeid.node_id set.
#[pg_extern(volatile, parallel_restricted)]
fn flakeid_next_id() -> i64 {
    shared::issue_one()
}

/// The next n IDs from this server's generator, in increasing order.
#[pg_extern(volatile, parallel_restricted)]
fn flakeid_next_ids(n: i32) -> SetOfIterator<'static, i64> {
    if n < 0 {
        raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("flakeid_next_ids({n}): n must not be negative"),
            "",
        );
    }
    SetOfIterator::new(Stream {
        left: n as usize,
        batch: Vec::new().into_iter(),
    })
}

/// `flakeid_next_ids`' rows, issued a batch at a time as PostgreSQL reads
/// them, so that no call holds more than a batch (a huge `n` streams,
/// rather than asking for its whole size in memory at once).
struct Stream {
    left: usize,
    batch: std::vec::IntoIter<i64>,
}

/// IDs issued in one go: a tick's worth under Twitter's layout.
const STREAM_BATCH: usize = 4096;

impl Iterator for Stream {
    type Item = i64;

    fn next(&mut self) -> Option<i64> {
        if let Some(id) = self.batch.next() {
            return Some(id);
        }
        if self.left == 0 {
            return None;
        }
        let take = self.left.min(STREAM_BATCH);
        self.left -= take;
        self.batch = shared::issue(take).into_iter();
        self.batch.next()
    }
}

/// The parts of an ID under flakeid.layout: when it was issued, its node id,
/// the named node fields (as jsonb), its sequence and its clock id.
#[pg_extern(stable, parallel_safe)]
fn flakeid_decode(
    id: i64,
) -> TableIterator<
    'static,
    (
        name!(issued_at, TimestampWithTimeZone),
        name!(node_id, i64),
        name!(node_fields, JsonB),
        name!(sequence, i64),
        name!(clock_id, i64),
    ),
> {
    let decoded = decode(id);
    let fields: serde_json::Map<String, serde_json::Value> = decoded
        .node_fields()
        .map(|(name, value)| (name.to_string(), value.into()))
        .collect();
    TableIterator::once((
        timestamptz_of_ms(decoded.unix_ms()),
        decoded.node_id() as i64,
        JsonB(fields.into()),
        decoded.sequence() as i64,
        decoded.clock_id() as i64,
    ))
}

/// When an ID was issued, under flakeid.layout.
#[pg_extern(stable, parallel_safe)]
fn flakeid_timestamp(id: i64) -> TimestampWithTimeZone {
    timestamptz_of_ms(decode(id).unix_ms())
}

/// The smallest ID issued at or after `at`, under flakeid.layout: for range
/// scans, `WHERE id >= flakeid_min_id_at(now() - interval '1 hour')`.
#[pg_extern(stable, parallel_safe)]
fn flakeid_min_id_at(at: TimestampWithTimeZone) -> i64 {
    let us = i64::from(at).saturating_add(PG_EPOCH_OFFSET_US);
    let layout = settings::layout();
    // Round up to the millisecond: an ID at an earlier millisecond is before `at`.
    let ms = (us.max(0) as u64).div_ceil(1000);
    let ms = ms.max(layout.epoch_ms());
    match layout.first_id_at(UNIX_EPOCH + Duration::from_millis(ms)) {
        Ok(id) => u64::from(id) as i64,
        Err(e) => raise(
            PgSqlErrorCode::ERRCODE_DATETIME_FIELD_OVERFLOW,
            format!("no flakeid ID can be issued at {ms} Unix ms: {e}"),
            "the instant is past the end of flakeid.layout's time range",
        ),
    }
}

/// An ID as text: format 'base62' (the default), 'base32', 'hex' or
/// 'decimal'. The fixed-width forms sort as the IDs do.
#[pg_extern(immutable, parallel_safe)]
fn flakeid_encode(id: i64, format: default!(&str, "'base62'")) -> String {
    let Some(format) = IdFormat::ALL.into_iter().find(|f| f.name() == format) else {
        raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("unknown ID format '{format}'"),
            "use 'base62', 'base32', 'hex' or 'decimal'",
        )
    };
    format.encode(to_id(id)).to_string()
}

/// An ID from its text form, in any format flakeid_encode makes.
#[pg_extern(immutable, parallel_safe)]
fn flakeid_parse(text: &str) -> i64 {
    match Id::parse_any(text) {
        Ok((id, _)) => match id.to_i64() {
            Some(v) => v,
            None => raise(
                PgSqlErrorCode::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
                format!("'{text}' is an ID above bigint's range"),
                "",
            ),
        },
        Err(e) => raise(
            PgSqlErrorCode::ERRCODE_INVALID_TEXT_REPRESENTATION,
            format!("'{text}' is not an ID: {e}"),
            "",
        ),
    }
}

// What `\df+` shows: one comment per function, for whoever meets them in
// psql. Written last, after every function exists.
pgrx::extension_sql!(
    r#"
COMMENT ON FUNCTION flakeid_next_id() IS
'The next ID from this server''s one generator (shared memory, lock-free): use it as a column default, id bigint DEFAULT flakeid_next_id(). IDs increase with time and never repeat on this server, also after a crash, a clock set back or a promotion. Needs pg_flakeid in shared_preload_libraries and flakeid.node_id set.';
COMMENT ON FUNCTION flakeid_next_ids(integer) IS
'The next n IDs from this server''s generator, in increasing order.';
COMMENT ON FUNCTION flakeid_decode(bigint) IS
'The parts of an ID under flakeid.layout: issued_at (timestamptz), node_id, node_fields (jsonb, the layout''s named node fields), sequence and clock_id.';
COMMENT ON FUNCTION flakeid_timestamp(bigint) IS
'When an ID was issued (its timestamp field under flakeid.layout), as timestamptz.';
COMMENT ON FUNCTION flakeid_min_id_at(timestamptz) IS
'The smallest ID issued at or after the given instant, under flakeid.layout: WHERE id >= flakeid_min_id_at(now() - interval ''1 hour'') is an index range scan.';
COMMENT ON FUNCTION flakeid_encode(bigint, text) IS
'An ID as text: ''base62'' (default, 11 characters), ''base32'' (Crockford, 13), ''hex'' (16) or ''decimal''. The fixed-width forms sort as the IDs do.';
COMMENT ON FUNCTION flakeid_parse(text) IS
'An ID from any text form flakeid_encode makes (the format is recognised).';
"#,
    name = "comments",
    finalize,
);
