//! The PostgreSQL side of a SQL lease: tokio-postgres on the keeper's own
//! current-thread runtime, TLS by rustls against the system's roots (as
//! the URL's `sslmode` asks: `prefer` by default, `require`, `disable`).
//!
//! Every statement goes as one round trip with its parameters' types
//! (`query_typed`: no statement to prepare first), and the session commits
//! durably (`synchronous_commit = on`, whatever the server's default), so
//! an acknowledged claim or renewal survives a crash of the server.

use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Config};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::{Db, DbError, Row, Take, from_db, quote_identifier, to_db};

/// This server's identity, as the epoch rule compares it: its system
/// identifier (new for a new cluster, kept by a standby) and its timeline
/// (new after each promotion or point-in-time recovery). Fails on a
/// standby (recovery in progress).
const IDENTITY: &str = "((SELECT system_identifier::text FROM pg_control_system()) || '/' || \
                        substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))";

/// The table, its key, and its epoch row (this server's identity, no wait),
/// made in one transaction; creators are serialized by an advisory lock (a
/// race of `CREATE TABLE IF NOT EXISTS` can fail). `{t}` is the quoted name.
pub(crate) fn create_sql(table: &str) -> String {
    let t = quote_identifier(table, '"');
    format!(
        "BEGIN;\n\
         SELECT pg_advisory_xact_lock(hashtext('flakeid lease table'));\n\
         CREATE TABLE IF NOT EXISTS {t} (\n    \
             prefix  text        NOT NULL,\n    \
             node    bigint      NOT NULL,\n    \
             token   text,\n    \
             expires timestamptz NOT NULL,\n    \
             ttl_ms  bigint      NOT NULL,\n    \
             mark_ms bigint      NOT NULL,\n    \
             PRIMARY KEY (prefix, node)\n\
         );\n\
         INSERT INTO {t} (prefix, node, token, expires, ttl_ms, mark_ms)\n    \
             VALUES ('', -1, {IDENTITY}, 'epoch', 0, 0) ON CONFLICT DO NOTHING;\n\
         COMMIT;"
    )
}

/// The columns a lease table needs, with their types as `format_type`
/// names them.
const COLUMNS: [(&str, &str); 6] = [
    ("prefix", "text"),
    ("node", "bigint"),
    ("token", "text"),
    ("expires", "timestamp with time zone"),
    ("ttl_ms", "bigint"),
    ("mark_ms", "bigint"),
];

pub(crate) struct PgDb {
    config: Config,
    tls: MakeRustlsConnect,
    /// The table's name as given, and quoted.
    name: String,
    table: String,
    create: bool,
    /// The session's statement and lock timeouts (the lease's connect
    /// timeout): a statement the keeper gave up on does not linger.
    statement_timeout: Duration,
    runtime: Runtime,
    client: Option<Client>,
}

impl PgDb {
    pub(crate) fn new(
        url: &str,
        table: &str,
        create: bool,
        statement_timeout: Duration,
    ) -> Result<PgDb, DbError> {
        let config = Config::from_str(url).map_err(|e| {
            DbError::Config(format!(
                "PostgreSQL URL {}: {e}",
                super::super::mask_password(url)
            ))
        })?;
        let mut roots = rustls::RootCertStore::empty();
        // Certificates the system trusts; one that does not parse is left
        // out (a server it signed fails its handshake, with that error).
        let found = rustls_native_certs::load_native_certs();
        for cert in found.certs {
            let _ = roots.add(cert);
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| DbError::Config(format!("TLS: {e}")))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| {
                DbError::Config(format!(
                    "cannot start a runtime for the PostgreSQL client: {e}"
                ))
            })?;
        Ok(PgDb {
            config,
            tls: MakeRustlsConnect::new(tls),
            name: table.to_owned(),
            table: quote_identifier(table, '"'),
            create,
            statement_timeout,
            runtime,
            client: None,
        })
    }

    /// One statement on the open connection, within the deadline.
    fn query(
        &mut self,
        sql: &str,
        params: &[(&(dyn ToSql + Sync), Type)],
        deadline: Instant,
    ) -> Result<Vec<tokio_postgres::Row>, DbError> {
        let Some(client) = &self.client else {
            return Err(DbError::Unreachable("not connected".into()));
        };
        let budget = deadline.saturating_duration_since(Instant::now());
        let answer = self.runtime.block_on(async {
            tokio::time::timeout(budget, client.query_typed(sql, params)).await
        });
        match answer {
            Ok(Ok(rows)) => Ok(rows),
            Ok(Err(e)) => Err(sort(&e)),
            Err(_) => Err(DbError::Unreachable(format!("no answer within {budget:?}"))),
        }
    }

    /// Session settings, read-only servers refused, the table checked (and
    /// created if missing and allowed).
    fn set_up(&mut self, deadline: Instant) -> Result<(), DbError> {
        let ms = self.statement_timeout.as_millis().max(1);
        let settings = format!(
            "SET synchronous_commit = on; SET statement_timeout = {ms}; SET lock_timeout = {ms}; \
             SET idle_in_transaction_session_timeout = {ms}; SET application_name = 'flakeid lease'"
        );
        self.batch(&settings, deadline)?;
        let rows = self.query(
            "SELECT pg_is_in_recovery(), current_setting('transaction_read_only') = 'on', \
             current_user::text",
            &[],
            deadline,
        )?;
        let row = one(&rows)?;
        let (standby, read_only, user): (bool, bool, String) =
            (get(row, 0)?, get(row, 1)?, get(row, 2)?);
        if standby {
            return Err(DbError::Refused(
                "the server is a standby (in recovery): give the primary's URL, or several hosts \
                 with target_session_attrs=read-write"
                    .into(),
            ));
        }
        if read_only {
            return Err(DbError::Refused(
                "the session is read-only (default_transaction_read_only is on)".into(),
            ));
        }
        if self.table_oid(deadline)?.is_none() {
            if !self.create {
                return Err(DbError::Table(
                    "missing (create_table is off): create it with the SQL in flakeid's lease \
                     docs"
                        .into(),
                ));
            }
            let create = create_sql(&self.name);
            self.batch(&create, deadline).map_err(|e| match e {
                DbError::Table(reason) | DbError::Refused(reason) => DbError::Table(format!(
                    "missing, and user {user} cannot create it ({reason}): create it with the \
                     SQL in flakeid's lease docs"
                )),
                other => other,
            })?;
        }
        let Some(oid) = self.table_oid(deadline)? else {
            return Err(DbError::Table("missing after CREATE TABLE".into()));
        };
        self.check_shape(oid, &user, deadline)
    }

    fn batch(&mut self, sql: &str, deadline: Instant) -> Result<(), DbError> {
        let Some(client) = &self.client else {
            return Err(DbError::Unreachable("not connected".into()));
        };
        let budget = deadline.saturating_duration_since(Instant::now());
        match self
            .runtime
            .block_on(async { tokio::time::timeout(budget, client.batch_execute(sql)).await })
        {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(sort(&e)),
            Err(_) => Err(DbError::Unreachable(format!("no answer within {budget:?}"))),
        }
    }

    /// The table's oid, as the session's search path finds it.
    fn table_oid(&mut self, deadline: Instant) -> Result<Option<u32>, DbError> {
        let table = self.table.clone();
        let rows = self.query(
            "SELECT to_regclass($1)::oid",
            &[(&table, Type::TEXT)],
            deadline,
        )?;
        get(one(&rows)?, 0)
    }

    /// The columns, the key on (prefix, node), the rights.
    fn check_shape(&mut self, oid: u32, user: &str, deadline: Instant) -> Result<(), DbError> {
        let rows = self.query(
            "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a \
             WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped",
            &[(&oid, Type::OID)],
            deadline,
        )?;
        let mut found = Vec::new();
        for row in &rows {
            let (name, kind): (String, String) = (get(row, 0)?, get(row, 1)?);
            found.push((name, kind));
        }
        for (column, kind) in COLUMNS {
            match found.iter().find(|(name, _)| name == column) {
                None => return Err(DbError::Table(format!("has no column {column} ({kind})"))),
                Some((_, other)) if other != kind => {
                    return Err(DbError::Table(format!(
                        "column {column} is {other}, not {kind}"
                    )));
                }
                Some(_) => {}
            }
        }
        let rows = self.query(
            "SELECT EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = $1 AND i.indisunique \
             AND i.indnkeyatts = 2 AND i.indpred IS NULL AND (SELECT array_agg(a.attname::text \
             ORDER BY a.attname::text) FROM pg_attribute a WHERE a.attrelid = i.indrelid \
             AND a.attnum = ANY (i.indkey)) = ARRAY['node', 'prefix']), \
             has_table_privilege($1, 'SELECT'), has_table_privilege($1, 'INSERT'), \
             has_table_privilege($1, 'UPDATE')",
            &[(&oid, Type::OID)],
            deadline,
        )?;
        let row = one(&rows)?;
        if !get::<bool>(row, 0)? {
            return Err(DbError::Table(
                "has no primary key or unique index on (prefix, node)".into(),
            ));
        }
        for (i, right) in [(1, "SELECT"), (2, "INSERT"), (3, "UPDATE")] {
            if !get::<bool>(row, i)? {
                return Err(DbError::Table(format!(
                    "user {user} lacks the {right} right on it"
                )));
            }
        }
        Ok(())
    }

    /// The expression a claim judges expiry by: the database's clock, or
    /// (planted) the claimant's.
    fn now(take: &Take<'_>) -> String {
        match take.planted.claimant_ms {
            Some(ms) => format!("to_timestamp({ms}::float8 / 1000)"),
            None => "now()".into(),
        }
    }
}

impl Db for PgDb {
    fn connected(&self) -> bool {
        self.client.as_ref().is_some_and(|c| !c.is_closed())
    }

    fn connect(&mut self, deadline: Instant) -> Result<(), DbError> {
        self.client = None;
        let budget = deadline.saturating_duration_since(Instant::now());
        if budget.is_zero() {
            return Err(DbError::Unreachable("no time left to connect".into()));
        }
        let mut config = self.config.clone();
        config.connect_timeout(budget);
        let tls = self.tls.clone();
        let connected = self
            .runtime
            .block_on(async { tokio::time::timeout(budget, config.connect(tls)).await });
        let (client, connection) = match connected {
            Ok(Ok(pair)) => pair,
            Ok(Err(e)) => return Err(sort(&e)),
            Err(_) => {
                return Err(DbError::Unreachable(format!(
                    "not connected within {budget:?}"
                )));
            }
        };
        // Drives the connection whenever the runtime runs (in each call).
        self.runtime.spawn(async move {
            let _ = connection.await;
        });
        self.client = Some(client);
        let set_up = self.set_up(deadline);
        if set_up.is_err() {
            self.client = None;
        }
        set_up
    }

    fn disconnect(&mut self) {
        self.client = None;
    }

    fn epoch_wait(&mut self, own_ttl_ms: u64, deadline: Instant) -> Result<u64, DbError> {
        let t = self.table.clone();
        let own = to_db(own_ttl_ms);
        // A server new to the data starts an epoch: now, and the longest
        // TTL any row holds (or the claimer's). One statement, so that
        // claimers racing to start it agree: the row's token decides.
        let start = format!(
            "INSERT INTO {t} AS e (prefix, node, token, expires, ttl_ms, mark_ms) \
             VALUES ('', -1, {IDENTITY}, now(), GREATEST($1, (SELECT COALESCE(max(ttl_ms), 0) \
             FROM {t} WHERE node >= 0)), 0) \
             ON CONFLICT (prefix, node) DO UPDATE SET token = EXCLUDED.token, \
             expires = EXCLUDED.expires, ttl_ms = EXCLUDED.ttl_ms \
             WHERE e.token IS DISTINCT FROM EXCLUDED.token"
        );
        self.query(&start, &[(&own, Type::INT8)], deadline)?;
        let read = format!(
            "SELECT token = {IDENTITY}, GREATEST(0, ceil(extract(epoch FROM expires - now()) \
             * 1000)::bigint + GREATEST(ttl_ms, $1)) FROM {t} WHERE prefix = '' AND node = -1"
        );
        let rows = self.query(&read, &[(&own, Type::INT8)], deadline)?;
        let row = one(&rows)?;
        if !get::<bool>(row, 0)? {
            return Err(DbError::Unreachable(
                "the server's identity changed during the claim (a failover)".into(),
            ));
        }
        from_db("the epoch's wait", get(row, 1)?)
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
             WHERE prefix = $1 AND node BETWEEN $2 AND $3 ORDER BY node",
            now = Self::now(take),
            t = self.table
        );
        let prefix = take.prefix.to_owned();
        let (first, last) = (to_db(first), to_db(last));
        let rows = self.query(
            &sql,
            &[
                (&prefix, Type::TEXT),
                (&first, Type::INT8),
                (&last, Type::INT8),
            ],
            deadline,
        )?;
        rows.iter()
            .map(|row| {
                Ok(Row {
                    node: from_db("a node id", get(row, 0)?)?,
                    mark_ms: from_db("a mark", get(row, 1)?)?,
                    free: get(row, 2)?,
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
        let mark = match take.planted.claim_drops_mark {
            true => "$5",
            false => "GREATEST(mark_ms, $5)",
        };
        let sql = match seen {
            None => format!(
                "INSERT INTO {t} (prefix, node, token, expires, ttl_ms, mark_ms) \
                 VALUES ($1, $2, $3, now() + $4 * interval '1 millisecond', $4, $5) \
                 ON CONFLICT (prefix, node) DO NOTHING RETURNING mark_ms"
            ),
            Some(_) => format!(
                "UPDATE {t} SET token = $3, expires = now() + $4 * interval '1 millisecond', \
                 ttl_ms = $4, mark_ms = {mark} WHERE prefix = $1 AND node = $2 AND mark_ms = $6 \
                 AND (token IS NULL OR expires <= {now}) RETURNING mark_ms",
                now = Self::now(take)
            ),
        };
        let (prefix, token) = (take.prefix.to_owned(), take.token.to_owned());
        let (node_db, ttl, ceiling) = (to_db(node), to_db(take.ttl_ms), to_db(take.ceiling_ms));
        let seen_db = to_db(seen.unwrap_or(0));
        let mut params: Vec<(&(dyn ToSql + Sync), Type)> = vec![
            (&prefix, Type::TEXT),
            (&node_db, Type::INT8),
            (&token, Type::TEXT),
            (&ttl, Type::INT8),
            (&ceiling, Type::INT8),
        ];
        if seen.is_some() {
            params.push((&seen_db, Type::INT8));
        }
        let rows = self.query(&sql, &params, deadline)?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let now = from_db("the mark recorded", get(row, 0)?)?;
        let found = match take.planted.claim_drops_mark {
            true => 0,
            false => seen.unwrap_or(0),
        };
        Ok(Some((found, now)))
    }

    fn renew(&mut self, take: &Take<'_>, node: u64, deadline: Instant) -> Result<bool, DbError> {
        let holder = match take.planted.renew_any_token {
            true => "$3::text IS NOT NULL",
            false => "token = $3",
        };
        let sql = format!(
            "UPDATE {t} SET expires = now() + $4 * interval '1 millisecond', ttl_ms = $4, \
             mark_ms = GREATEST(mark_ms, $5) WHERE prefix = $1 AND node = $2 AND {holder} \
             RETURNING node",
            t = self.table
        );
        let (prefix, token) = (take.prefix.to_owned(), take.token.to_owned());
        let (node, ttl, ceiling) = (to_db(node), to_db(take.ttl_ms), to_db(take.ceiling_ms));
        let rows = self.query(
            &sql,
            &[
                (&prefix, Type::TEXT),
                (&node, Type::INT8),
                (&token, Type::TEXT),
                (&ttl, Type::INT8),
                (&ceiling, Type::INT8),
            ],
            deadline,
        )?;
        Ok(!rows.is_empty())
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
            "UPDATE {t} SET token = NULL, expires = now(), mark_ms = COALESCE($4, mark_ms) \
             WHERE prefix = $1 AND node = $2 AND token = $3",
            t = self.table
        );
        let (prefix, token) = (prefix.to_owned(), token.to_owned());
        let node = to_db(node);
        let mark = mark_ms.map(to_db);
        self.query(
            &sql,
            &[
                (&prefix, Type::TEXT),
                (&node, Type::INT8),
                (&token, Type::TEXT),
                (&mark, Type::INT8),
            ],
            deadline,
        )?;
        Ok(())
    }
}

fn one(rows: &[tokio_postgres::Row]) -> Result<&tokio_postgres::Row, DbError> {
    match rows {
        [row] => Ok(row),
        _ => Err(DbError::BadReply(format!(
            "{} rows where one was expected",
            rows.len()
        ))),
    }
}

fn get<'a, T: tokio_postgres::types::FromSql<'a>>(
    row: &'a tokio_postgres::Row,
    i: usize,
) -> Result<T, DbError> {
    row.try_get(i)
        .map_err(|e| DbError::BadReply(format!("column {i}: {e}")))
}

/// Sorts a tokio-postgres error into the kinds a keeper tells apart.
fn sort(e: &tokio_postgres::Error) -> DbError {
    let reason = match e.as_db_error() {
        Some(db) => format!("{}: {} ({})", db.severity(), db.message(), db.code().code()),
        None => {
            let mut reason = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                reason = format!("{reason}: {s}");
                source = s.source();
            }
            reason
        }
    };
    let Some(code) = e.code() else {
        // No SQLSTATE: the server spoke something else than PostgreSQL's
        // protocol, or the connection (or TLS) failed, or it closed.
        if reason.starts_with("unexpected message from server")
            || reason.starts_with("error parsing response from server")
        {
            return DbError::BadReply(reason);
        }
        if reason.contains("TLS") || reason.contains("certificate") || reason.contains("tls") {
            return DbError::Refused(reason);
        }
        return DbError::Unreachable(reason);
    };
    match code {
        c if *c == SqlState::UNDEFINED_TABLE
            || *c == SqlState::UNDEFINED_COLUMN
            || *c == SqlState::DATATYPE_MISMATCH
            || *c == SqlState::INVALID_COLUMN_REFERENCE
            || *c == SqlState::INSUFFICIENT_PRIVILEGE =>
        {
            DbError::Table(reason)
        }
        c if *c == SqlState::ADMIN_SHUTDOWN
            || *c == SqlState::CRASH_SHUTDOWN
            || *c == SqlState::CANNOT_CONNECT_NOW
            || *c == SqlState::TOO_MANY_CONNECTIONS
            || *c == SqlState::QUERY_CANCELED
            || *c == SqlState::LOCK_NOT_AVAILABLE
            || *c == SqlState::T_R_SERIALIZATION_FAILURE
            || *c == SqlState::T_R_DEADLOCK_DETECTED
            || *c == SqlState::IDLE_IN_TRANSACTION_SESSION_TIMEOUT
            || c.code().starts_with("08") =>
        {
            DbError::Unreachable(reason)
        }
        _ => DbError::Refused(reason),
    }
}

#[cfg(all(test, not(flakeid_loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_schema_quotes_the_table() {
        let sql = create_sql("a\"b");
        assert!(sql.contains("CREATE TABLE IF NOT EXISTS \"a\"\"b\" ("));
        assert!(sql.contains("INSERT INTO \"a\"\"b\" "));
    }

    #[test]
    fn a_bad_url_is_a_configuration_error_without_its_password() {
        match PgDb::new(
            "postgres://app:s3cret@db:5432/x?sslmode=nonsense",
            "t",
            true,
            Duration::from_secs(1),
        ) {
            Err(DbError::Config(reason)) => {
                assert!(reason.contains("sslmode"), "{reason}");
                assert!(!reason.contains("s3cret"), "{reason}");
            }
            Err(other) => panic!("expected a configuration error, got {other:?}"),
            Ok(_) => panic!("expected a configuration error"),
        }
    }
}
