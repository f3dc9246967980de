//! Node-id leases on a relational database: PostgreSQL (`postgres.rs`,
//! feature `postgres`) and MySQL 8 or MariaDB 10.11 (`mysql.rs`, feature
//! `mysql`), each driven on a current-thread tokio runtime of the keeper's
//! own, as etcd's client is.
//!
//! # The table
//!
//! One row per (prefix, node id): the holder's token (`NULL` when free),
//! the expiry on the **database's** clock, the TTL it was set with, and the
//! mark. Rows are never deleted: a released node id keeps its mark, which
//! the next holder starts above. One more row per table, `('', -1)` (an
//! empty prefix is refused by the lease), holds the **epoch**: the identity
//! of the server that serves the data (PostgreSQL: its system identifier and
//! timeline; MySQL: its `server_id`, host name and port), when that server
//! first served a claim, and the longest TTL in use then.
//!
//! Every statement is one autocommitted, atomic step, and none holds a lock
//! across a round trip (a paused client can block nobody):
//!
//! - **Claim**: check the epoch, list the prefix's rows in the range, and
//!   take the lowest free usable node id with one conditional statement:
//!   an `INSERT` that does nothing if the row exists, or an `UPDATE` of a
//!   free row whose mark is still the one listed. Two claimers racing for a
//!   node id are decided by the row: one statement changes it, the other
//!   changes nothing and lists again.
//! - **Renew**: an `UPDATE` of the row whose token is this holder's, which
//!   pushes the expiry to the database's `now()` plus the TTL and raises
//!   the mark (never lowers it).
//! - **Release**: the same row, token cleared, mark set to the exact last
//!   time issued.
//!
//! # Failover
//!
//! A standby promoted after asynchronous replication may lack claims and
//! renewals the old primary acknowledged. A claim first compares the
//! server's identity with the epoch row's: on a server new to the data (a
//! promotion, or a restore) it starts a new epoch, and every claim in the
//! epoch's first stretch (the longest TTL of any row, or the claimer's if
//! longer) waits until it is over before its generator issues, as a Redis
//! lease does after a Sentinel failover: by then every lease another
//! server acknowledged has ended, lost or not. This assumes the old
//! primary accepts no writes once the new one is promoted (it is stopped,
//! or fenced by the failover manager, as Patroni and pg_auto_failover do);
//! with synchronous replication a deposed primary cannot commit anyway.

#[cfg(feature = "mysql")]
pub(crate) mod mysql;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;

use std::time::{Duration, Instant};

use super::keeper::{Ask, CallLimit, Claim, Claimed, Settings, Skipped, Store, ttl_ms};
use crate::error::LeaseError;
#[cfg(any(test, flakeid_plant))]
use crate::plant::Plant;

/// The table a SQL lease uses unless told otherwise.
pub(crate) const DEFAULT_TABLE: &str = "flakeid_leases";

/// What a SQL lease asks for besides its terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SqlConfig {
    pub(crate) url: String,
    pub(crate) table: String,
    /// Create the table (and its epoch row) if it is missing.
    pub(crate) create: bool,
}

impl SqlConfig {
    pub(crate) fn new(url: String) -> SqlConfig {
        SqlConfig {
            url,
            table: DEFAULT_TABLE.into(),
            create: true,
        }
    }

    /// The table name's limits, the same on both databases.
    pub(crate) fn check(&self, prefix: &str) -> Result<(), LeaseError> {
        if self.table.is_empty() || self.table.len() > 63 || self.table.contains('\0') {
            return Err(LeaseError::Config {
                reason: format!(
                    "table name {:?}: 1 to 63 bytes, no NUL (one identifier: choose the schema \
                     or database in the URL)",
                    self.table
                ),
            });
        }
        if prefix.len() > 255 || prefix.contains('\0') {
            return Err(LeaseError::Config {
                reason: format!("prefix {prefix:?}: at most 255 bytes, no NUL, for a SQL lease"),
            });
        }
        Ok(())
    }
}

/// One row of the prefix, as a claim lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Row {
    pub(crate) node: u64,
    pub(crate) mark_ms: u64,
    /// No holder, or its expiry has passed by the database's clock.
    pub(crate) free: bool,
}

/// Why a database call failed, sorted for the keeper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DbError {
    /// No answer in time, the connection broke, or the server is starting
    /// up or shutting down: try again (on a new connection).
    Unreachable(String),
    /// The server refused (authentication, a read-only server, ...).
    Refused(String),
    /// The table is missing, has another shape, or the user lacks a right.
    Table(String),
    /// An answer flakeid cannot use.
    BadReply(String),
    /// The URL or the TLS setup is wrong.
    Config(String),
}

/// The database calls a SQL lease makes, each bounded by `deadline`. A
/// call that fails with [`DbError::Unreachable`] leaves the connection to be
/// made again.
pub(crate) trait Db: Send + 'static {
    /// Whether a connection is open.
    fn connected(&self) -> bool;

    /// Connects, sets the session up (durable commits, timeouts), and
    /// checks the table, creating it if missing and allowed.
    fn connect(&mut self, deadline: Instant) -> Result<(), DbError>;

    /// Drops the connection.
    fn disconnect(&mut self);

    /// Starts a new epoch if this server is new to the data; returns how
    /// long a claim must wait now (milliseconds, by the server's clock),
    /// given the claimer's TTL.
    fn epoch_wait(&mut self, own_ttl_ms: u64, deadline: Instant) -> Result<u64, DbError>;

    /// The prefix's rows in `first..=last`, by node id; `free` by the
    /// database's clock (by `claimant_ms` under a plant).
    fn rows(
        &mut self,
        take: &Take<'_>,
        first: u64,
        last: u64,
        deadline: Instant,
    ) -> Result<Vec<Row>, DbError>;

    /// Takes node `node`: inserts its row if `seen` is `None` (nothing if
    /// it exists), or else updates it if it is free and its mark is still
    /// `seen`. The mark found and the mark now, if taken.
    fn take(
        &mut self,
        take: &Take<'_>,
        node: u64,
        seen: Option<u64>,
        deadline: Instant,
    ) -> Result<Option<(u64, u64)>, DbError>;

    /// Pushes the expiry of this holder's row and raises its mark to
    /// `ceiling_ms`; `false` if the row is not this holder's.
    fn renew(&mut self, lease: &Take<'_>, node: u64, deadline: Instant) -> Result<bool, DbError>;

    /// Clears the token of this holder's row, first setting its mark to
    /// `mark_ms` if given.
    fn release(
        &mut self,
        prefix: &str,
        token: &str,
        node: u64,
        mark_ms: Option<u64>,
        deadline: Instant,
    ) -> Result<(), DbError>;
}

/// What a claim or renewal writes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Take<'a> {
    pub(crate) prefix: &'a str,
    pub(crate) token: &'a str,
    pub(crate) ttl_ms: u64,
    /// The mark to raise the row's to.
    pub(crate) ceiling_ms: u64,
    /// The bugs a plant puts in the statements (never set outside tests).
    pub(crate) planted: Planted,
}

/// Bugs planted in a SQL store's statements (`crate::plant`): each makes
/// a statement break one rule.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Planted {
    /// Free rows judged by this Unix millisecond of the claimant's clock
    /// instead of the database's `now()`.
    pub(crate) claimant_ms: Option<u64>,
    /// Renewals update the row whoever holds it.
    pub(crate) renew_any_token: bool,
    /// A claim overwrites the mark with its ceiling and reports 0 found.
    pub(crate) claim_drops_mark: bool,
}

/// Quotes `name` as one SQL identifier with `quote` (`"` for PostgreSQL,
/// `` ` `` for MySQL), doubling the quote inside it: any name, however
/// hostile, stays one identifier.
pub(crate) fn quote_identifier(name: &str, quote: char) -> String {
    let mut quoted = String::with_capacity(name.len() + 2);
    quoted.push(quote);
    for c in name.chars() {
        if c == quote {
            quoted.push(quote);
        }
        quoted.push(c);
    }
    quoted.push(quote);
    quoted
}

/// A node id or mark as the database stores it (`BIGINT`).
pub(crate) fn to_db(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// A node id or mark read back: never negative.
pub(crate) fn from_db(what: &str, value: i64) -> Result<u64, DbError> {
    u64::try_from(value).map_err(|_| DbError::BadReply(format!("{what} is {value}, below 0")))
}

/// A lease store on a SQL database.
pub(crate) struct SqlStore<D> {
    db: D,
    server: String,
    /// The table's name, for messages.
    table: String,
    prefix: String,
    token: String,
    ttl_ms: u64,
    limit: CallLimit,
    #[cfg(any(test, flakeid_plant))]
    plant: Option<Plant>,
}

impl<D: Db> SqlStore<D> {
    pub(crate) fn new(
        db: D,
        table: &str,
        prefix: &str,
        settings: &Settings,
        token: String,
    ) -> Result<Self, LeaseError> {
        if i64::try_from(settings.last).is_err() {
            return Err(LeaseError::Config {
                reason: format!(
                    "node ids up to {} do not fit the table's BIGINT column",
                    settings.last
                ),
            });
        }
        Ok(SqlStore {
            db,
            server: settings.server.clone(),
            table: table.to_owned(),
            prefix: prefix.to_owned(),
            token,
            ttl_ms: ttl_ms(settings.ttl),
            limit: CallLimit {
                timeout: settings.connect_timeout,
                deadline: None,
            },
            #[cfg(any(test, flakeid_plant))]
            plant: settings.plant,
        })
    }

    fn planted(&self) -> Planted {
        #[cfg(any(test, flakeid_plant))]
        {
            let plant = self.plant;
            Planted {
                claimant_ms: (plant == Some(Plant::SqlExpiryByClaimant)).then(|| {
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
                }),
                renew_any_token: plant == Some(Plant::SqlRenewalUnchecked),
                claim_drops_mark: plant == Some(Plant::SqlClaimDropsMark),
            }
        }
        #[cfg(not(any(test, flakeid_plant)))]
        Planted::default()
    }

    /// Runs one call within the budget, connecting first if needed. A call
    /// that may be sent twice (`retry`: it changes nothing a second time)
    /// and fails as unreachable on a connection made earlier is sent once
    /// more on a new one, within the same budget: a server restarted since
    /// the last call leaves a dead connection that only a call discovers,
    /// and that should not cost a renewal.
    fn call<T>(
        &mut self,
        what: &str,
        retry: bool,
        mut run: impl FnMut(&mut D, &Take<'_>, Instant) -> Result<T, DbError>,
        ceiling_ms: u64,
    ) -> Result<T, LeaseError> {
        let budget = self.limit.budget();
        if budget.is_zero() {
            return Err(self.unreachable(what, "no time left".into()));
        }
        let deadline = Instant::now() + budget;
        let mut fresh = false;
        loop {
            if !self.db.connected() {
                if let Err(e) = self.db.connect(deadline) {
                    return Err(self.error("connect", e));
                }
                fresh = true;
            }
            let take = Take {
                prefix: &self.prefix,
                token: &self.token,
                ttl_ms: self.ttl_ms,
                ceiling_ms,
                planted: self.planted(),
            };
            match run(&mut self.db, &take, deadline) {
                Ok(value) => return Ok(value),
                Err(DbError::Unreachable(_)) if retry && !fresh && Instant::now() < deadline => {
                    self.db.disconnect();
                }
                Err(e) => return Err(self.error(what, e)),
            }
        }
    }

    fn unreachable(&mut self, what: &str, reason: String) -> LeaseError {
        self.db.disconnect();
        LeaseError::Unreachable {
            server: self.server.clone(),
            waited: self.limit.timeout,
            reason: format!("{what}: {reason}"),
        }
    }

    fn error(&mut self, what: &str, e: DbError) -> LeaseError {
        match e {
            DbError::Unreachable(reason) => self.unreachable(what, reason),
            DbError::Refused(reason) => {
                // A read-only server today may be a primary after a failover:
                // connect again next time.
                self.db.disconnect();
                LeaseError::Refused {
                    reason: format!("{what}: {reason}"),
                }
            }
            DbError::Table(reason) => {
                self.db.disconnect();
                LeaseError::Table {
                    table: self.table.clone(),
                    reason,
                }
            }
            DbError::BadReply(reason) => LeaseError::BadReply {
                reason: format!("{what}: {reason}"),
            },
            DbError::Config(reason) => LeaseError::Config { reason },
        }
    }
}

/// Where a claim's listing leads.
enum Target {
    /// A node id with no row yet (mark 0).
    New(u64),
    /// A free row, with the mark listed.
    Free(u64, u64),
}

/// The lowest node id a claim may take, from the rows of `first..=last`
/// (ascending), counting the free ones skipped for marks too far ahead.
fn choose(rows: &[Row], ask: &Ask, skipped: &mut Skipped) -> Option<Target> {
    let mut next = ask.first;
    for row in rows {
        if row.node > next {
            return Some(Target::New(next));
        }
        next = row.node.saturating_add(1);
        if !row.free {
            continue;
        }
        match ask.takes(row.mark_ms) {
            Ok(true) => return Some(Target::Free(row.node, row.mark_ms)),
            Ok(false) => {}
            Err(()) => skipped.add(row.node, row.mark_ms),
        }
    }
    match rows.last() {
        None => Some(Target::New(ask.first)),
        Some(row) if row.node < ask.last => Some(Target::New(row.node + 1)),
        Some(_) => None,
    }
}

impl<D: Db> Store for SqlStore<D> {
    fn set_timeout(&mut self, timeout: Duration) {
        self.limit.timeout = timeout;
    }

    fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.limit.deadline = deadline;
    }

    fn claim(&mut self, ask: &Ask) -> Result<Claimed, LeaseError> {
        let ttl_ms = self.ttl_ms;
        let wait_ms = self.call(
            "check the epoch",
            true,
            |db, _, deadline| db.epoch_wait(ttl_ms, deadline),
            ask.ceiling_ms,
        )?;
        // Each round that loses a race to another claimer lists again; the
        // budget bounds the rounds.
        loop {
            let (first, last) = (ask.first, ask.last);
            let rows = self.call(
                "list the node ids",
                true,
                |db, take, deadline| db.rows(take, first, last, deadline),
                ask.ceiling_ms,
            )?;
            let mut skipped = Skipped::default();
            let Some(target) = choose(&rows, ask, &mut skipped) else {
                return Ok(Claimed::None(skipped));
            };
            let (node, seen) = match target {
                Target::New(node) => (node, None),
                Target::Free(node, mark) => (node, Some(mark)),
            };
            let taken = self.call(
                "claim a node id",
                // Applied but unanswered, a second copy would find the row
                // taken (by this holder) and take another node id.
                false,
                |db, take, deadline| db.take(take, node, seen, deadline),
                ask.ceiling_ms,
            )?;
            let Some((mark_ms, ceiling_ms)) = taken else {
                continue;
            };
            let claim = Claim {
                node,
                mark_ms,
                ceiling_ms,
                handle: 0,
            };
            return Ok(match wait_ms {
                0 => Claimed::Node(claim, skipped),
                ms => Claimed::NodeAfter(claim, skipped, Duration::from_millis(ms)),
            });
        }
    }

    fn renew(&mut self, claim: &Claim, ceiling_ms: u64) -> Result<bool, LeaseError> {
        let node = claim.node;
        self.call(
            "renew the lease",
            true,
            |db, take, deadline| db.renew(take, node, deadline),
            ceiling_ms,
        )
    }

    fn release(&mut self, claim: &Claim, mark_ms: Option<u64>) -> Result<(), LeaseError> {
        let node = claim.node;
        self.call(
            "release the node id",
            true,
            |db, take, deadline| db.release(take.prefix, take.token, node, mark_ms, deadline),
            claim.ceiling_ms,
        )
    }
}

#[cfg(all(test, not(flakeid_loom)))]
mod tests {
    use super::*;

    #[test]
    fn hostile_names_stay_one_identifier() {
        assert_eq!(
            quote_identifier("flakeid_leases", '"'),
            "\"flakeid_leases\""
        );
        assert_eq!(
            quote_identifier("x\"; DROP TABLE users; --", '"'),
            "\"x\"\"; DROP TABLE users; --\""
        );
        assert_eq!(quote_identifier("a`b", '`'), "`a``b`");
        assert_eq!(quote_identifier("Ünï \"q\"", '"'), "\"Ünï \"\"q\"\"\"");
    }

    fn ask(first: u64, last: u64) -> Ask {
        Ask {
            first,
            last,
            fresh_before_ms: None,
            usable_until_ms: 1_000,
            ceiling_ms: 500,
        }
    }

    fn row(node: u64, mark_ms: u64, free: bool) -> Row {
        Row {
            node,
            mark_ms,
            free,
        }
    }

    fn chosen(rows: &[Row], ask: &Ask) -> (Option<(u64, Option<u64>)>, Skipped) {
        let mut skipped = Skipped::default();
        let target = choose(rows, ask, &mut skipped).map(|t| match t {
            Target::New(n) => (n, None),
            Target::Free(n, m) => (n, Some(m)),
        });
        (target, skipped)
    }

    #[test]
    fn a_claim_takes_the_lowest_free_usable_node_id() {
        let a = ask(3, 6);
        assert_eq!(chosen(&[], &a).0, Some((3, None)));
        // 3 held, 4 free with a mark: 4 over the gap at 5.
        let rows = [row(3, 10, false), row(4, 20, true)];
        assert_eq!(chosen(&rows, &a).0, Some((4, Some(20))));
        // A gap below a free row comes first.
        let rows = [row(4, 20, true)];
        assert_eq!(chosen(&rows, &a).0, Some((3, None)));
        // Marks too far ahead are skipped and named; the next gap is taken.
        let rows = [row(3, 5_000, true), row(4, 7_000, true), row(5, 1, false)];
        let (target, skipped) = chosen(&rows, &a);
        assert_eq!(target, Some((6, None)));
        assert_eq!(skipped.count, 2);
        assert_eq!(skipped.lowest, vec![(3, 5_000), (4, 7_000)]);
        // Every node id has a row, none usable.
        let rows = [
            row(3, 1, false),
            row(4, 1, false),
            row(5, 9_999, true),
            row(6, 1, false),
        ];
        let (target, skipped) = chosen(&rows, &a);
        assert_eq!(target, None);
        assert_eq!(skipped.count, 1);
        // A rotation's claim wants a mark before its fresh-before.
        let mut rotation = ask(0, 1);
        rotation.fresh_before_ms = Some(100);
        let rows = [row(0, 100, true), row(1, 99, true)];
        assert_eq!(chosen(&rows, &rotation).0, Some((1, Some(99))));
    }

    #[test]
    fn the_last_node_id_of_a_full_range_does_not_overflow() {
        let a = ask(u64::MAX - 1, u64::MAX);
        let rows = [row(u64::MAX - 1, 0, false), row(u64::MAX, 0, false)];
        assert_eq!(chosen(&rows, &a).0, None);
    }
}
