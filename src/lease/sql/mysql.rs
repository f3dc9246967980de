//! The MySQL side of a SQL lease (MySQL 8, MariaDB 10.11): mysql_async on
//! the keeper's own current-thread runtime, TLS by rustls when the URL asks
//! for it (`require_ssl=true`).
//!
//! Times are `DATETIME(6)` in UTC (`UTC_TIMESTAMP(6)`), so no session's
//! time zone changes what a row's expiry means. Statements are prepared
//! once per connection (mysql_async's statement cache).

use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder, Params, Value};
use tokio::runtime::Runtime;

use super::{Db, DbError, Row, Take, from_db, quote_identifier, to_db};

/// This server's identity, as the epoch rule compares it: `server_id`
/// (distinct for each server of a replicated setup), host name and port.
const IDENTITY: &str = "CONCAT(@@server_id, '/', @@hostname, ':', @@port)";

/// The table (InnoDB, the prefix compared byte for byte) and its epoch row
/// (this server's identity, no wait). `{t}` is the quoted name.
pub(crate) fn create_sql(table: &str) -> [String; 2] {
    let t = quote_identifier(table, '`');
    [
        format!(
            "CREATE TABLE IF NOT EXISTS {t} (\n    \
                 prefix  VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,\n    \
                 node    BIGINT       NOT NULL,\n    \
                 token   VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,\n    \
                 expires DATETIME(6)  NOT NULL,\n    \
                 ttl_ms  BIGINT       NOT NULL,\n    \
                 mark_ms BIGINT       NOT NULL,\n    \
                 PRIMARY KEY (prefix, node)\n\
             ) ENGINE = InnoDB"
        ),
        format!(
            "INSERT IGNORE INTO {t} (prefix, node, token, expires, ttl_ms, mark_ms)\n    \
                 VALUES ('', -1, {IDENTITY}, '1970-01-01 00:00:00', 0, 0)"
        ),
    ]
}

/// The columns a lease table needs, with their `DATA_TYPE`.
const COLUMNS: [(&str, &str); 6] = [
    ("prefix", "varchar"),
    ("node", "bigint"),
    ("token", "varchar"),
    ("expires", "datetime"),
    ("ttl_ms", "bigint"),
    ("mark_ms", "bigint"),
];

pub(crate) struct MyDb {
    opts: Opts,
    name: String,
    /// The table's name, quoted.
    table: String,
    create: bool,
    /// Only if the URL asks for it (`prefer_socket=true`).
    prefer_socket: bool,
    /// The session's lock wait timeout (the lease's connect timeout).
    lock_timeout: Duration,
    runtime: Runtime,
    conn: Option<Conn>,
}

impl MyDb {
    pub(crate) fn new(
        url: &str,
        table: &str,
        create: bool,
        lock_timeout: Duration,
    ) -> Result<MyDb, DbError> {
        let opts = Opts::from_url(url).map_err(|e| {
            DbError::Config(format!(
                "MySQL URL {}: {e}",
                super::super::mask_password(url)
            ))
        })?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| {
                DbError::Config(format!("cannot start a runtime for the MySQL client: {e}"))
            })?;
        Ok(MyDb {
            opts,
            name: table.to_owned(),
            table: quote_identifier(table, '`'),
            create,
            prefer_socket: url.contains("prefer_socket=true"),
            lock_timeout,
            runtime,
            conn: None,
        })
    }

    /// Runs `work` on the connection within the deadline; a connection
    /// that timed out or failed below SQL is dropped.
    fn run<T>(
        &mut self,
        deadline: Instant,
        work: impl AsyncFnOnce(&mut Conn) -> mysql_async::Result<T>,
    ) -> Result<T, DbError> {
        let Some(conn) = &mut self.conn else {
            return Err(DbError::Unreachable("not connected".into()));
        };
        let budget = deadline.saturating_duration_since(Instant::now());
        let answer = self
            .runtime
            .block_on(async { tokio::time::timeout(budget, work(conn)).await });
        let result = match answer {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(sort(&e)),
            Err(_) => Err(DbError::Unreachable(format!("no answer within {budget:?}"))),
        };
        if let Err(DbError::Unreachable(_)) = &result {
            self.disconnect();
        }
        result
    }

    fn set_up(&mut self, deadline: Instant) -> Result<(), DbError> {
        let seconds = self.lock_timeout.as_secs().max(1);
        let (read_only, user): (i64, String) = self.run(deadline, async |c| {
            c.query_drop(format!("SET SESSION innodb_lock_wait_timeout = {seconds}"))
                .await?;
            let row: Option<(i64, String)> = c
                .query_first("SELECT @@global.read_only, CURRENT_USER()")
                .await?;
            Ok(row.unwrap_or((0, String::new())))
        })?;
        if read_only != 0 {
            return Err(DbError::Refused(
                "the server is read-only (read_only is on: a replica?): give the primary's URL"
                    .into(),
            ));
        }
        let name = self.name.clone();
        let columns: Vec<(String, String)> = self.run(deadline, async |c| {
            c.exec(
                "SELECT COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS \
                 WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
                (name,),
            )
            .await
        })?;
        if columns.is_empty() {
            if !self.create {
                return Err(DbError::Table(
                    "missing, or this user has no right on it (create_table is off): create it \
                     with the SQL in flakeid's lease docs"
                        .into(),
                ));
            }
            let [create, epoch] = create_sql(&self.name);
            self.run(deadline, async |c| {
                c.query_drop(create).await?;
                c.query_drop(epoch).await
            })
            .map_err(|e| match e {
                DbError::Table(reason) | DbError::Refused(reason) => DbError::Table(format!(
                    "missing, and user {user} cannot create it ({reason}): create it with the \
                     SQL in flakeid's lease docs"
                )),
                other => other,
            })?;
            return self.check_rights(deadline);
        }
        for (column, kind) in COLUMNS {
            match columns.iter().find(|(name, _)| name == column) {
                None => return Err(DbError::Table(format!("has no column {column} ({kind})"))),
                Some((_, other)) if !other.eq_ignore_ascii_case(kind) => {
                    return Err(DbError::Table(format!(
                        "column {column} is {other}, not {kind}"
                    )));
                }
                Some(_) => {}
            }
        }
        let name = self.name.clone();
        let key: Option<i64> = self.run(deadline, async |c| {
            c.exec_first(
                "SELECT COUNT(*) FROM (SELECT INDEX_NAME FROM information_schema.STATISTICS \
                 WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND NON_UNIQUE = 0 \
                 GROUP BY INDEX_NAME HAVING COUNT(*) = 2 AND SUM(COLUMN_NAME IN ('prefix', \
                 'node')) = 2) k",
                (name,),
            )
            .await
        })?;
        if key.unwrap_or(0) == 0 {
            return Err(DbError::Table(
                "has no primary key or unique index on (prefix, node)".into(),
            ));
        }
        self.check_rights(deadline)
    }

    /// Reads and writes the epoch row as the lease will: a user without
    /// SELECT, INSERT or UPDATE on the table is told so now, not at its
    /// first renewal. (The epoch row is written back unchanged.)
    fn check_rights(&mut self, deadline: Instant) -> Result<(), DbError> {
        let t = self.table.clone();
        self.run(deadline, async |c| {
            c.query_drop(format!(
                "INSERT INTO {t} (prefix, node, token, expires, ttl_ms, mark_ms) \
                 VALUES ('', -1, {IDENTITY}, UTC_TIMESTAMP(6), 0, 0) \
                 ON DUPLICATE KEY UPDATE token = token"
            ))
            .await
        })
        .map_err(|e| match e {
            DbError::Refused(reason) => DbError::Table(reason),
            other => other,
        })
    }

    /// The expression a claim judges expiry by: the database's clock, or
    /// (planted) the claimant's.
    fn now(take: &Take<'_>) -> String {
        match take.planted.claimant_ms {
            Some(ms) => format!(
                "TIMESTAMPADD(MICROSECOND, {}, '1970-01-01 00:00:00')",
                u128::from(ms) * 1000
            ),
            None => "UTC_TIMESTAMP(6)".into(),
        }
    }
}

impl Db for MyDb {
    fn connected(&self) -> bool {
        self.conn.is_some()
    }

    fn connect(&mut self, deadline: Instant) -> Result<(), DbError> {
        self.disconnect();
        let budget = deadline.saturating_duration_since(Instant::now());
        if budget.is_zero() {
            return Err(DbError::Unreachable("no time left to connect".into()));
        }
        // mysql_async would switch a connection to 127.0.0.1 over to the
        // server's Unix socket: past any proxy the URL names. The URL's
        // address is the one to use.
        let opts = OptsBuilder::from_opts(self.opts.clone())
            .stmt_cache_size(16)
            .prefer_socket(self.prefer_socket);
        let connected = self
            .runtime
            .block_on(async { tokio::time::timeout(budget, Conn::new(opts)).await });
        self.conn = Some(match connected {
            Ok(Ok(conn)) => conn,
            Ok(Err(e)) => return Err(sort(&e)),
            Err(_) => {
                return Err(DbError::Unreachable(format!(
                    "not connected within {budget:?}"
                )));
            }
        });
        let set_up = self.set_up(deadline);
        if set_up.is_err() {
            self.disconnect();
        }
        set_up
    }

    fn disconnect(&mut self) {
        // Inside the runtime, so the driver can close the socket politely.
        let _inside = self.runtime.enter();
        self.conn = None;
    }

    fn epoch_wait(&mut self, own_ttl_ms: u64, deadline: Instant) -> Result<u64, DbError> {
        let t = self.table.clone();
        let own = to_db(own_ttl_ms);
        let (matches, wait): (i64, i64) = self.run(deadline, async |c| {
            let longest: Option<i64> = c
                .query_first(format!(
                    "SELECT COALESCE(MAX(ttl_ms), 0) FROM {t} WHERE node >= 0"
                ))
                .await?;
            let longest = longest.unwrap_or(0).max(own);
            // A server new to the data starts an epoch; the row's token
            // decides between claimers racing to start it (the token is
            // assigned last: MySQL assigns left to right).
            c.exec_drop(
                format!(
                    "INSERT INTO {t} (prefix, node, token, expires, ttl_ms, mark_ms) \
                     VALUES ('', -1, {IDENTITY}, UTC_TIMESTAMP(6), ?, 0) \
                     ON DUPLICATE KEY UPDATE \
                     expires = IF(token <=> VALUES(token), expires, VALUES(expires)), \
                     ttl_ms = IF(token <=> VALUES(token), ttl_ms, VALUES(ttl_ms)), \
                     token = VALUES(token)"
                ),
                (longest,),
            )
            .await?;
            let row: Option<(i64, i64)> = c
                .exec_first(
                    format!(
                        "SELECT token <=> {IDENTITY}, GREATEST(0, CEIL(TIMESTAMPDIFF(MICROSECOND, \
                         UTC_TIMESTAMP(6), expires) / 1000) + GREATEST(ttl_ms, ?)) FROM {t} \
                         WHERE prefix = '' AND node = -1"
                    ),
                    (own,),
                )
                .await?;
            Ok(row.unwrap_or((0, 0)))
        })?;
        if matches != 1 {
            return Err(DbError::Unreachable(
                "the server's identity changed during the claim (a failover)".into(),
            ));
        }
        from_db("the epoch's wait", wait)
    }

    fn rows(
        &mut self,
        take: &Take<'_>,
        first: u64,
        last: u64,
        deadline: Instant,
    ) -> Result<Vec<Row>, DbError> {
        let sql = format!(
            "SELECT node, mark_ms, token IS NULL OR expires <= {now} FROM {t} \
             WHERE prefix = ? AND node BETWEEN ? AND ? ORDER BY node",
            now = Self::now(take),
            t = self.table
        );
        let params = (take.prefix.to_owned(), to_db(first), to_db(last));
        let rows: Vec<(i64, i64, i64)> = self.run(deadline, async |c| c.exec(sql, params).await)?;
        rows.into_iter()
            .map(|(node, mark, free)| {
                Ok(Row {
                    node: from_db("a node id", node)?,
                    mark_ms: from_db("a mark", mark)?,
                    free: free != 0,
                })
            })
            .collect()
    }

    fn take(
        &mut self,
        take: &Take<'_>,
        node: u64,
        seen: Option<u64>,
        deadline: Instant,
    ) -> Result<Option<(u64, u64)>, DbError> {
        let t = &self.table;
        let ttl_us = to_db(take.ttl_ms).saturating_mul(1000);
        let ceiling = to_db(take.ceiling_ms);
        let (sql, params): (String, Params) = match seen {
            None => (
                format!(
                    "INSERT IGNORE INTO {t} (prefix, node, token, expires, ttl_ms, mark_ms) \
                     VALUES (?, ?, ?, UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, ?, ?)"
                ),
                Params::Positional(vec![
                    Value::from(take.prefix),
                    Value::from(to_db(node)),
                    Value::from(take.token),
                    Value::from(ttl_us),
                    Value::from(to_db(take.ttl_ms)),
                    Value::from(ceiling),
                ]),
            ),
            Some(seen) => (
                format!(
                    "UPDATE {t} SET token = ?, expires = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, \
                     ttl_ms = ?, mark_ms = {mark} WHERE prefix = ? AND node = ? AND mark_ms = ? \
                     AND (token IS NULL OR expires <= {now})",
                    mark = match take.planted.claim_drops_mark {
                        true => "?",
                        false => "GREATEST(mark_ms, ?)",
                    },
                    now = Self::now(take)
                ),
                Params::Positional(vec![
                    Value::from(take.token),
                    Value::from(ttl_us),
                    Value::from(to_db(take.ttl_ms)),
                    Value::from(ceiling),
                    Value::from(take.prefix),
                    Value::from(to_db(node)),
                    Value::from(to_db(seen)),
                ]),
            ),
        };
        let changed = self.run(deadline, async |c| {
            c.exec_drop(sql, params).await?;
            Ok(c.affected_rows())
        })?;
        if changed != 1 {
            return Ok(None);
        }
        let found = match (seen, take.planted.claim_drops_mark) {
            (_, true) | (None, _) => 0,
            (Some(seen), false) => seen,
        };
        let now = match take.planted.claim_drops_mark {
            true => take.ceiling_ms,
            false => found.max(take.ceiling_ms),
        };
        Ok(Some((found, now)))
    }

    fn renew(&mut self, take: &Take<'_>, node: u64, deadline: Instant) -> Result<bool, DbError> {
        let holder = match take.planted.renew_any_token {
            true => "? IS NOT NULL",
            false => "token = ?",
        };
        let sql = format!(
            "UPDATE {t} SET expires = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, ttl_ms = ?, \
             mark_ms = GREATEST(mark_ms, ?) WHERE prefix = ? AND node = ? AND {holder}",
            t = self.table
        );
        let params = (
            to_db(take.ttl_ms).saturating_mul(1000),
            to_db(take.ttl_ms),
            to_db(take.ceiling_ms),
            take.prefix.to_owned(),
            to_db(node),
            take.token.to_owned(),
        );
        let changed = self.run(deadline, async |c| {
            c.exec_drop(sql, params).await?;
            Ok(c.affected_rows())
        })?;
        Ok(changed == 1)
    }

    fn release(
        &mut self,
        prefix: &str,
        token: &str,
        node: u64,
        mark_ms: Option<u64>,
        deadline: Instant,
    ) -> Result<(), DbError> {
        let sql = format!(
            "UPDATE {t} SET token = NULL, expires = UTC_TIMESTAMP(6), \
             mark_ms = COALESCE(?, mark_ms) WHERE prefix = ? AND node = ? AND token = ?",
            t = self.table
        );
        let params = (
            mark_ms.map(to_db),
            prefix.to_owned(),
            to_db(node),
            token.to_owned(),
        );
        self.run(deadline, async |c| c.exec_drop(sql, params).await)
    }
}

/// Sorts a mysql_async error into the kinds a keeper tells apart.
fn sort(e: &mysql_async::Error) -> DbError {
    use mysql_async::Error as E;
    let reason = e.to_string();
    match e {
        E::Server(server) => match server.code {
            // No such table, no such column, the command denied on it.
            1146 | 1054 | 1142 | 1143 => DbError::Table(reason),
            // Lock wait timeout, deadlock, query interrupted, server
            // shutting down, too many connections.
            1205 | 1213 | 1317 | 1053 | 1040 | 1927 => DbError::Unreachable(reason),
            // Access denied, read-only (--read-only, a read-only
            // transaction), and everything else the server refuses.
            _ => DbError::Refused(reason),
        },
        E::Url(_) => DbError::Config(reason),
        // The URL asks for TLS and the server offers none.
        E::Driver(mysql_async::DriverError::NoClientSslFlagFromServer) => {
            DbError::Refused(format!("TLS: {reason}"))
        }
        E::Io(mysql_async::IoError::Tls(_)) => DbError::Refused(format!("TLS: {reason}")),
        E::Io(_) | E::Driver(_) | E::Other(_) => DbError::Unreachable(reason),
    }
}

#[cfg(all(test, not(flakeid_loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_schema_quotes_the_table() {
        let [create, epoch] = create_sql("a`b");
        assert!(create.contains("CREATE TABLE IF NOT EXISTS `a``b` ("));
        assert!(epoch.contains("INSERT IGNORE INTO `a``b` "));
    }

    #[test]
    fn a_bad_url_is_a_configuration_error_without_its_password() {
        match MyDb::new(
            "mysql://app:s3cret@db:3306/x?nonsense=1",
            "t",
            true,
            Duration::from_secs(1),
        ) {
            Err(DbError::Config(reason)) => assert!(!reason.contains("s3cret"), "{reason}"),
            Err(other) => panic!("expected a configuration error, got {other:?}"),
            Ok(_) => panic!("expected a configuration error"),
        }
    }
}
