//! Why a node id cannot be leased.

use std::fmt;
use std::time::Duration;

/// A node id could not be leased from etcd, Redis, PostgreSQL or MySQL (the
/// `etcd`, `redis`, `postgres` and `mysql` features), or a lease is
/// configured wrongly.
///
/// Building a generator with a lease fails with one of these (inside
/// [`BuildError::Lease`](crate::BuildError::Lease)); a running generator's keeper retries instead, and
/// the generator is fenced ([`GenerateError::Fenced`](crate::GenerateError::Fenced)) until a claim succeeds.
///
/// ```
/// use flakeid::LeaseError;
///
/// let e = LeaseError::AllHeld { first: 0, last: 1023 };
/// assert_eq!(e.to_string(), "every node id in 0..=1023 is held by another generator");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaseError {
    /// Every node id in the range is leased by another generator.
    AllHeld {
        /// The first node id of the range.
        first: u64,
        /// The last node id of the range.
        last: u64,
    },
    /// The server did not answer within the time allowed (refused the
    /// connection, timed out, or the connection broke).
    Unreachable {
        /// The server, as configured.
        server: String,
        /// How long flakeid tried.
        waited: Duration,
        /// The last error seen.
        reason: String,
    },
    /// The server answered something flakeid cannot use: a malformed reply,
    /// or a value under the key prefix that flakeid did not write.
    BadReply {
        /// What was wrong.
        reason: String,
    },
    /// The server refused a request (authentication, permissions, a
    /// read-only replica, out of memory, ...).
    Refused {
        /// The server's error.
        reason: String,
    },
    /// The lease's table on PostgreSQL or MySQL (features `postgres`,
    /// `mysql`) is missing (and may not be created), has another shape, or
    /// the user lacks a right on it. Nothing was issued or overwritten.
    Table {
        /// The table, as configured ([`Lease::table`](crate::Lease::table)).
        table: String,
        /// What is missing or wrong.
        reason: String,
    },
    /// The lease is configured wrongly (a TTL shorter than its safety margin,
    /// a node-id range outside the layout, lease with persistence, ...).
    Config {
        /// What is wrong.
        reason: String,
    },
    /// Every node id in the range that no generator holds has a mark (the
    /// last time its earlier holders may have used) too far past this
    /// generator's clock to issue under it soon: left by a holder whose clock
    /// ran ahead, or written by hand. See
    /// [`Lease::max_mark_ahead`](crate::Lease::max_mark_ahead).
    MarksAhead {
        /// The first node id of the range.
        first: u64,
        /// The last node id of the range.
        last: u64,
        /// How many free node ids were skipped for their marks.
        skipped: u64,
        /// The lowest of them (up to 8), each with its mark in Unix milliseconds.
        lowest: Vec<(u64, u64)>,
        /// The latest mark a claim would take: this generator's clock plus the
        /// bound, in Unix milliseconds.
        usable_until_ms: u64,
    },
}

impl fmt::Display for LeaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LeaseError::AllHeld { first, last } => write!(
                f,
                "every node id in {first}..={last} is held by another generator"
            ),
            LeaseError::Unreachable {
                server,
                waited,
                reason,
            } => write!(f, "no answer from {server} within {waited:?}: {reason}"),
            LeaseError::BadReply { reason } => {
                write!(f, "unexpected reply from the lease store: {reason}")
            }
            LeaseError::Refused { reason } => {
                write!(f, "the lease store refused the request: {reason}")
            }
            LeaseError::Table { table, reason } => write!(f, "lease table {table:?}: {reason}"),
            LeaseError::Config { reason } => write!(f, "invalid lease configuration: {reason}"),
            LeaseError::MarksAhead {
                first,
                last,
                skipped,
                lowest,
                usable_until_ms,
            } => {
                write!(
                    f,
                    "every free node id in {first}..={last} ({skipped}) has a mark later than \
                     {usable_until_ms} ms since 1970, the latest this generator's clock can use \
                     soon; the lowest (node id: mark):"
                )?;
                for (node, mark) in lowest {
                    write!(f, " {node}: {mark}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for LeaseError {}
