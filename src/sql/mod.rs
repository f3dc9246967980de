//! [`Id`](crate::Id) in SQL databases: `ToSql` and `FromSql` for
//! rust-postgres and tokio-postgres (feature `postgres-types`), sqlx's
//! `Type`, `Encode` and `Decode` on every database whose `i64` has them
//! (feature `sqlx`), and Diesel's `ToSql`, `FromSql`, `AsExpression` and
//! `FromSqlRow` (feature `diesel` for PostgreSQL and MySQL, `diesel-sqlite`
//! for SQLite too).
//!
//! # A signed `BIGINT`
//!
//! SQL has no unsigned 64-bit integer, so an `Id` is stored as a `BIGINT`
//! (PostgreSQL's `INT8`, MySQL's `BIGINT`, SQLite's `INTEGER`) holding the
//! same number. That fits every ID up to `i64::MAX` (2^63 − 1), which is every
//! ID of a layout that leaves the top bit unused (`Layout::twitter`,
//! `Layout::sonyflake`, `Layout::js_safe`). Layouts that use all 64 bits
//! ([`Layout::total_bits`](crate::Layout::total_bits) `== 64`:
//! `Layout::instagram`, `Layout::discord`) make IDs above `i64::MAX` after
//! [`Layout::last_signed_ms`](crate::Layout::last_signed_ms) (34.8 years after
//! an Instagram layout's epoch; 2084-09-06 for Discord's).
//!
//! Writing such an ID is an error, not the negative number a cast would
//! give: the database compares `BIGINT`s as signed numbers, so a wrapped ID
//! would sort before every earlier one and silently break `ORDER BY id` and
//! range queries. Reading a negative `BIGINT` as an `Id` is an error too; no
//! layout makes one. Both errors are a
//! [`ConvertIdError`](crate::ConvertIdError) (its message says which) as the
//! source of the client library's own error (sqlx's `Query::bind` keeps only
//! its message; `Query::try_bind` returns it as it is), and nothing is
//! written. Check `last_signed_ms` against the lifetime your data needs when
//! you choose a layout; past it, store a fixed-width string form
//! ([`IdFormat`](crate::IdFormat)) or a `NUMERIC(20)` instead.
//!
//! The column must be a 64-bit integer: a smaller one (`INT4`, `INTEGER` in
//! PostgreSQL) is a type error from the driver, as it is for an `i64`.
//!
//! # Order
//!
//! A `BIGINT` column sorts as the numbers do, and the IDs of one layout sort
//! by creation time, so `ORDER BY id` is creation order: exactly, for the
//! IDs of one generator (as the crate's Guarantees say, except after
//! `OnClockBehind::NextClock`); to the tick, across generators (within one
//! tick the fields below the timestamp decide). A `BIGINT PRIMARY KEY`
//! filled with new IDs grows at the right edge of its index, as a sequence
//! would, instead of splitting pages all over it as random keys do.
//!
//! # Time ranges
//!
//! An ID holds its time, so the primary key's index answers time-range
//! queries without a time column: [`Layout::first_id_at`](crate::Layout::first_id_at)
//! and [`Layout::last_id_at`](crate::Layout::last_id_at) are the smallest and
//! largest IDs of the tick that holds an instant. `BETWEEN` includes both
//! ends, here the whole tick of each; for a half-open window `[start, end)`,
//! write `id >= first_id_at(start) AND id < first_id_at(end)`.
//!
//! With tokio-postgres (feature `postgres-types`):
//!
//! ```ignore
//! # #[cfg(feature = "postgres-types")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::{Duration, SystemTime};
//! use flakeid::{Id, Layout};
//!
//! let (client, connection) =
//!     tokio_postgres::connect("host=127.0.0.1 user=postgres", tokio_postgres::NoTls).await?;
//! tokio::spawn(connection);
//!
//! let layout = Layout::twitter();
//! let end = SystemTime::now();
//! let start = end - Duration::from_secs(3600);
//! let rows = client
//!     .query(
//!         "SELECT id FROM orders WHERE id BETWEEN $1 AND $2 ORDER BY id",
//!         &[&layout.first_id_at(start)?, &layout.last_id_at(end)?],
//!     )
//!     .await?;
//! for row in rows {
//!     let id: Id = row.try_get(0)?;
//!     println!("{id} made at {}", layout.decode(id)?);
//! }
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "postgres-types"))]
//! # fn main() {}
//! ```
//!
//! With sqlx (feature `sqlx`; here its PostgreSQL driver, the same code for
//! MySQL and SQLite with their placeholders):
//!
//! ```ignore
//! # #[cfg(feature = "sqlx")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::{Duration, SystemTime};
//! use flakeid::{Id, Layout};
//!
//! let pool = sqlx::PgPool::connect("postgres://postgres@127.0.0.1/postgres").await?;
//! let layout = Layout::twitter();
//! let end = SystemTime::now();
//! let start = end - Duration::from_secs(3600);
//! let ids: Vec<Id> =
//!     sqlx::query_scalar("SELECT id FROM orders WHERE id BETWEEN $1 AND $2 ORDER BY id")
//!         .bind(layout.first_id_at(start)?)
//!         .bind(layout.last_id_at(end)?)
//!         .fetch_all(&pool)
//!         .await?;
//! println!("{} orders in the last hour", ids.len());
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "sqlx"))]
//! # fn main() {}
//! ```
//!
//! # Tested databases
//!
//! `tests/sql` (`cargo test -p flakeid-sql-tests`, a crate of its own so
//! that the clients are not dependencies of this one; it runs the queries of
//! the examples here, which rustdoc therefore does not) runs tokio-postgres,
//! sqlx and Diesel against a real PostgreSQL server (Debian's `postgresql`,
//! started by the test), and sqlx and Diesel against SQLite in process:
//! round trips, `ORDER BY id` against creation order, a `BIGINT PRIMARY
//! KEY`, time-range queries, and the refusals both ways. MySQL and MariaDB
//! are not tested: sqlx's impls are the same generic ones, which delegate to
//! `i64`'s; Diesel's MySQL `ToSql` writes the checked number as Diesel's own
//! `i64` does (native byte order), and its `FromSql` is the generic one.
//!
//! sqlx binds a `Vec<Id>` to a PostgreSQL array only through a driver trait
//! (`PgHasArrayType`) this crate does not implement, since that would tie it
//! to one driver: bind a `Vec<i64>` for `id = ANY($1)`. postgres-types takes
//! `&[Id]` as an `INT8[]` directly.

#[cfg(feature = "diesel")]
mod diesel;
#[cfg(feature = "postgres-types")]
mod postgres_types;
#[cfg(feature = "sqlx")]
mod sqlx;
