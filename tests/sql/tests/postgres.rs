//! `Id` in real databases: a PostgreSQL server (Debian's `postgresql`,
//! started by the tests on 127.0.0.1) through tokio-postgres (feature
//! `postgres-types`) and sqlx's PostgreSQL driver (feature `sqlx`), and
//! sqlx's in-process SQLite.
//!
//! Every check compares results with what the generator handed out, never
//! with timings: IDs at chosen times come from a `ManualClock`.

use std::error::Error;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use flakeid::{ConvertIdError, Generator, Id, Layout, ManualClock};
use flakeid_test_servers::Postgres;
use sqlx::Connection;
use tokio_postgres::NoTls;
use tokio_postgres::error::SqlState;

type TestResult = Result<(), Box<dyn Error>>;

/// The millisecond the time-range tests start at (2023-11-14).
const T0: u64 = 1_700_000_000_000;

/// One server for the tests that run together; the last to finish stops it.
/// Each test works in tables of its own.
fn server() -> Arc<Postgres> {
    static SHARED: Mutex<Weak<Postgres>> = Mutex::new(Weak::new());
    let mut shared = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(server) = shared.upgrade() {
        return server;
    }
    let server = Arc::new(Postgres::start());
    *shared = Arc::downgrade(&server);
    server
}

/// Both clients on one server. The server is the last field, so it is
/// dropped (and maybe stopped) after the clients.
struct Clients {
    client: tokio_postgres::Client,
    pool: sqlx::PgPool,
    _server: Arc<Postgres>,
}

async fn connect() -> Result<Clients, Box<dyn Error>> {
    let server = server();
    let (client, connection) = tokio_postgres::connect(&server.url(), NoTls).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .connect(&server.url())
        .await?;
    Ok(Clients {
        client,
        pool,
        _server: server,
    })
}

/// Whether `error` or an error it wraps is a `ConvertIdError`.
fn caused_by_convert(error: &(dyn Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(e) = next {
        if e.is::<ConvertIdError>() {
            return true;
        }
        next = e.source();
    }
    false
}

/// `items` in an order unrelated to theirs (a stride coprime to the length),
/// so that a correct `ORDER BY` is not the insertion order by luck.
fn scrambled<T: Clone>(items: &[T]) -> Vec<T> {
    const STRIDE: usize = 7919; // prime
    assert!(!items.len().is_multiple_of(STRIDE));
    (0..items.len())
        .map(|i| items[(i * STRIDE) % items.len()].clone())
        .collect()
}

/// IDs from two generators sharing a manual clock: three per node at each
/// millisecond `T0 + 0..10`, with the millisecond offset each was made at.
fn ids_at_chosen_times() -> Result<Vec<(Id, i32)>, Box<dyn Error>> {
    let clock = ManualClock::new(T0);
    let generators = [1, 2].map(|node| {
        Generator::builder(Layout::twitter())
            .node_id(node)
            .clock(clock.clone())
            .build()
    });
    let [a, b] = generators;
    let (a, b) = (a?, b?);
    let mut made = Vec::new();
    for offset in 0..10 {
        clock.set_ms(T0 + offset as u64);
        for _ in 0..3 {
            made.push((a.next_id(), offset));
            made.push((b.next_id(), offset));
        }
    }
    Ok(made)
}

fn at_ms(unix_ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(unix_ms)
}

/// The IDs made in `offsets`, sorted.
fn made_in(made: &[(Id, i32)], offsets: std::ops::Range<i32>) -> Vec<Id> {
    let mut ids: Vec<Id> = made
        .iter()
        .filter(|(_, offset)| offsets.contains(offset))
        .map(|&(id, _)| id)
        .collect();
    ids.sort();
    ids
}

// --- PostgreSQL ------------------------------------------------------------

#[tokio::test]
async fn postgres_round_trip_through_both_crates() -> TestResult {
    let db = connect().await?;
    db.client
        .batch_execute(
            "CREATE TABLE round_trip (id BIGINT PRIMARY KEY, via TEXT NOT NULL, parent BIGINT)",
        )
        .await?;
    let generator = Generator::builder(Layout::twitter()).node_id(3).build()?;
    let (a, b) = (generator.next_id(), generator.next_id());
    let largest = Id::from_u64(i64::MAX as u64);

    // Written by one crate, read by the other, `NULL` as `None`.
    db.client
        .execute(
            "INSERT INTO round_trip (id, via, parent) VALUES ($1, 'tokio-postgres', $2), ($3, 'boundary', NULL)",
            &[&a, &None::<Id>, &largest],
        )
        .await?;
    sqlx::query("INSERT INTO round_trip (id, via, parent) VALUES ($1, 'sqlx', $2)")
        .bind(b)
        .bind(Some(a))
        .execute(&db.pool)
        .await?;

    let read: Vec<(Id, String, Option<Id>)> =
        sqlx::query_as("SELECT id, via, parent FROM round_trip ORDER BY id")
            .fetch_all(&db.pool)
            .await?;
    assert_eq!(
        read,
        [
            (a, "tokio-postgres".to_owned(), None),
            (b, "sqlx".to_owned(), Some(a)),
            (largest, "boundary".to_owned(), None),
        ]
    );
    let rows = db
        .client
        .query("SELECT id, parent FROM round_trip ORDER BY id", &[])
        .await?;
    let read: Vec<(Id, Option<Id>)> = rows
        .iter()
        .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
        .collect::<Result<_, tokio_postgres::Error>>()?;
    assert_eq!(read, [(a, None), (b, Some(a)), (largest, None)]);

    // The same number on both sides: what other programs see is the ID.
    let as_i64: i64 = db
        .client
        .query_one("SELECT id FROM round_trip WHERE via = 'sqlx'", &[])
        .await?
        .try_get(0)?;
    assert_eq!(as_i64, i64::try_from(b)?);

    // A slice of IDs is an INT8[] for postgres-types; one round trip.
    let found: Vec<Id> = db
        .client
        .query_one(
            "SELECT array_agg(id ORDER BY id) FROM round_trip WHERE id = ANY($1)",
            &[&vec![a, largest, Id::from_u64(5)]],
        )
        .await?
        .try_get(0)?;
    assert_eq!(found, [a, largest]);
    Ok(())
}

#[tokio::test]
async fn postgres_bigint_primary_key_orders_by_creation() -> TestResult {
    let db = connect().await?;
    db.client
        .batch_execute("CREATE TABLE creation_order (id BIGINT PRIMARY KEY, created INT NOT NULL)")
        .await?;
    let column_type: String = db
        .client
        .query_one(
            "SELECT data_type FROM information_schema.columns \
             WHERE table_name = 'creation_order' AND column_name = 'id'",
            &[],
        )
        .await?
        .try_get(0)?;
    assert_eq!(column_type, "bigint");

    // Single IDs and batches from one generator, in the order made.
    let generator = Generator::builder(Layout::twitter()).node_id(9).build()?;
    let mut made: Vec<Id> = Vec::new();
    while made.len() < 4_000 {
        made.push(generator.next_id());
        made.extend(generator.next_ids(99));
    }
    let expected: Vec<(Id, i32)> = made
        .iter()
        .enumerate()
        .map(|(i, &id)| (id, i as i32))
        .collect();
    let rows = scrambled(&expected);
    let (by_tokio_postgres, by_sqlx) = rows.split_at(rows.len() / 2);

    // Half through tokio-postgres, as one INT8[] (a slice of `Id`s) unnested.
    let (ids, created): (Vec<Id>, Vec<i32>) = by_tokio_postgres.iter().copied().unzip();
    db.client
        .execute(
            "INSERT INTO creation_order (id, created) SELECT * FROM unnest($1::INT8[], $2::INT4[])",
            &[&ids, &created],
        )
        .await?;
    // Half through sqlx, as one multi-row INSERT.
    let mut insert =
        sqlx::QueryBuilder::<sqlx::Postgres>::new("INSERT INTO creation_order (id, created) ");
    insert.push_values(by_sqlx, |mut row, &(id, created)| {
        row.push_bind(id).push_bind(created);
    });
    insert.build().execute(&db.pool).await?;

    let read: Vec<(Id, i32)> = sqlx::query_as("SELECT id, created FROM creation_order ORDER BY id")
        .fetch_all(&db.pool)
        .await?;
    assert_eq!(read, expected);
    let read: Vec<(Id, i32)> = db
        .client
        .query("SELECT id, created FROM creation_order ORDER BY id", &[])
        .await?
        .iter()
        .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
        .collect::<Result<_, tokio_postgres::Error>>()?;
    assert_eq!(read, expected);

    // The primary key holds: the same ID twice is refused.
    let again = db
        .client
        .execute(
            "INSERT INTO creation_order (id, created) VALUES ($1, -1)",
            &[&made[17]],
        )
        .await
        .unwrap_err();
    assert_eq!(again.code(), Some(&SqlState::UNIQUE_VIOLATION));
    Ok(())
}

#[tokio::test]
async fn postgres_time_range_query_returns_exactly_the_window() -> TestResult {
    let db = connect().await?;
    db.client
        .batch_execute("CREATE TABLE time_range (id BIGINT PRIMARY KEY, offset_ms INT NOT NULL)")
        .await?;
    let made = ids_at_chosen_times()?;
    let (ids, offsets): (Vec<Id>, Vec<i32>) = scrambled(&made).into_iter().unzip();
    db.client
        .execute(
            "INSERT INTO time_range (id, offset_ms) SELECT * FROM unnest($1::INT8[], $2::INT4[])",
            &[&ids, &offsets],
        )
        .await?;

    let layout = Layout::twitter();
    // Milliseconds 3 to 6, both included: `BETWEEN` the first ID of one and
    // the last of the other.
    let (first, last) = (
        layout.first_id_at(at_ms(T0 + 3))?,
        layout.last_id_at(at_ms(T0 + 6))?,
    );
    let expected = made_in(&made, 3..7);
    assert_eq!(expected.len(), 4 * 2 * 3);
    let rows = db
        .client
        .query(
            "SELECT id, offset_ms FROM time_range WHERE id BETWEEN $1 AND $2 ORDER BY id",
            &[&first, &last],
        )
        .await?;
    let read: Vec<Id> = rows
        .iter()
        .map(|row| row.try_get(0))
        .collect::<Result<_, _>>()?;
    assert_eq!(read, expected);
    assert!(
        rows.iter()
            .all(|row| (3..7).contains(&row.get::<_, i32>(1)))
    );
    let read: Vec<Id> =
        sqlx::query_scalar("SELECT id FROM time_range WHERE id BETWEEN $1 AND $2 ORDER BY id")
            .bind(first)
            .bind(last)
            .fetch_all(&db.pool)
            .await?;
    assert_eq!(read, expected);

    // Half-open, [3, 6): from the first ID of 3 to below the first of 6.
    let read: Vec<Id> =
        sqlx::query_scalar("SELECT id FROM time_range WHERE id >= $1 AND id < $2 ORDER BY id")
            .bind(first)
            .bind(layout.first_id_at(at_ms(T0 + 6))?)
            .fetch_all(&db.pool)
            .await?;
    assert_eq!(read, made_in(&made, 3..6));
    Ok(())
}

#[tokio::test]
async fn postgres_refuses_ids_above_i64_max_through_both_crates() -> TestResult {
    let db = connect().await?;
    db.client
        .batch_execute("CREATE TABLE refused (id BIGINT PRIMARY KEY)")
        .await?;
    // An Instagram layout's IDs pass i64::MAX after its last signed ms.
    let instagram = Layout::instagram(1_314_220_021_721)?;
    let clock = ManualClock::new(instagram.last_signed_ms() + 1);
    let late = Generator::builder(instagram)
        .node_id(1)
        .clock(clock)
        .build()?
        .next_id();
    let too_large = [Id::from_u64(u64::MAX), Id::from_u64(1 << 63), late];
    for &id in &too_large {
        assert_eq!(id.to_i64(), None);

        let error = db
            .client
            .execute("INSERT INTO refused (id) VALUES ($1)", &[&id])
            .await
            .unwrap_err();
        assert!(caused_by_convert(&error), "{error:?}");
        // tokio-postgres says which parameter; the cause says what is wrong.
        let cause = error.source().map(ToString::to_string);
        assert_eq!(cause.as_deref(), Some("the id is larger than i64::MAX"));

        let mut insert = sqlx::query::<sqlx::Postgres>("INSERT INTO refused (id) VALUES ($1)");
        let error = insert.try_bind(id).unwrap_err();
        assert!(error.is::<ConvertIdError>(), "{error:?}");
        let error = sqlx::query("INSERT INTO refused (id) VALUES ($1)")
            .bind(id)
            .execute(&db.pool)
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("larger than i64::MAX"),
            "{error}"
        );
    }
    // Nothing was stored, wrapped or otherwise; the connections still work.
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM refused")
        .fetch_one(&db.pool)
        .await?;
    assert_eq!(stored, 0);
    let stored: i64 = db
        .client
        .query_one("SELECT count(*) FROM refused", &[])
        .await?
        .try_get(0)?;
    assert_eq!(stored, 0);
    Ok(())
}

#[tokio::test]
async fn postgres_negative_or_narrow_columns_are_not_ids() -> TestResult {
    let db = connect().await?;
    db.client
        .batch_execute(
            "CREATE TABLE negative (id BIGINT, narrow INT);
             INSERT INTO negative VALUES (-1, 7), (-9223372036854775808, 7), (NULL, NULL);",
        )
        .await?;
    for value in [-1, i64::MIN] {
        let row = db
            .client
            .query_one("SELECT id FROM negative WHERE id = $1", &[&value])
            .await?;
        let error = row.try_get::<_, Id>(0).unwrap_err();
        assert!(caused_by_convert(&error), "{error:?}");
        let cause = error.source().map(ToString::to_string);
        assert_eq!(cause.as_deref(), Some("a negative integer is not an id"));

        let read = sqlx::query_scalar::<_, Id>("SELECT id FROM negative WHERE id = $1")
            .bind(value)
            .fetch_one(&db.pool)
            .await;
        let Err(sqlx::Error::ColumnDecode { source, .. }) = read else {
            panic!("a negative BIGINT was read as an id: {read:?}");
        };
        assert!(source.is::<ConvertIdError>(), "{source:?}");
    }

    // NULL is `None` for an `Option<Id>` and an error for an `Id`.
    let row = db
        .client
        .query_one("SELECT id FROM negative WHERE id IS NULL", &[])
        .await?;
    assert_eq!(row.try_get::<_, Option<Id>>(0)?, None);
    assert!(row.try_get::<_, Id>(0).is_err());
    let read: Option<Id> = sqlx::query_scalar("SELECT id FROM negative WHERE id IS NULL")
        .fetch_one(&db.pool)
        .await?;
    assert_eq!(read, None);

    // An `INT` column is not an ID column, even holding a valid value.
    let row = db
        .client
        .query_one("SELECT narrow FROM negative WHERE narrow = 7 LIMIT 1", &[])
        .await?;
    assert!(row.try_get::<_, Id>(0).is_err());
    let read = sqlx::query_scalar::<_, Id>("SELECT narrow FROM negative WHERE narrow = 7 LIMIT 1")
        .fetch_one(&db.pool)
        .await;
    assert!(
        matches!(read, Err(sqlx::Error::ColumnDecode { .. })),
        "{read:?}"
    );
    Ok(())
}

// --- SQLite, in process ------------------------------------------------------

async fn sqlite() -> Result<sqlx::SqliteConnection, sqlx::Error> {
    sqlx::SqliteConnection::connect("sqlite::memory:").await
}

#[tokio::test]
async fn sqlite_round_trip_and_creation_order() -> TestResult {
    let mut db = sqlite().await?;
    sqlx::query("CREATE TABLE creation_order (id INTEGER PRIMARY KEY, created INTEGER NOT NULL, parent INTEGER)")
        .execute(&mut db)
        .await?;
    let generator = Generator::builder(Layout::twitter()).node_id(9).build()?;
    let mut made: Vec<Id> = Vec::new();
    while made.len() < 2_000 {
        made.push(generator.next_id());
        made.extend(generator.next_ids(99));
    }
    made.push(Id::from_u64(i64::MAX as u64)); // the largest that fits
    let rows: Vec<(Id, i64)> = made
        .iter()
        .enumerate()
        .map(|(i, &id)| (id, i as i64))
        .collect();
    // SQLite takes at most 32,766 parameters a statement; 500 rows use 1,500.
    for chunk in scrambled(&rows).chunks(500) {
        let mut insert = sqlx::QueryBuilder::<sqlx::Sqlite>::new(
            "INSERT INTO creation_order (id, created, parent) ",
        );
        insert.push_values(chunk, |mut row, &(id, created)| {
            row.push_bind(id)
                .push_bind(created)
                .push_bind(Some(made[0]));
        });
        insert.build().execute(&mut db).await?;
    }

    let read: Vec<(Id, i64)> = sqlx::query_as("SELECT id, created FROM creation_order ORDER BY id")
        .fetch_all(&mut db)
        .await?;
    assert_eq!(read, rows);
    let parent: Option<Id> = sqlx::query_scalar("SELECT parent FROM creation_order WHERE id = ?")
        .bind(made[5])
        .fetch_one(&mut db)
        .await?;
    assert_eq!(parent, Some(made[0]));
    let raw: i64 = sqlx::query_scalar("SELECT id FROM creation_order WHERE created = 1")
        .fetch_one(&mut db)
        .await?;
    assert_eq!(raw, i64::try_from(made[1])?);
    Ok(())
}

#[tokio::test]
async fn sqlite_time_range_query_returns_exactly_the_window() -> TestResult {
    let mut db = sqlite().await?;
    sqlx::query("CREATE TABLE time_range (id INTEGER PRIMARY KEY, offset_ms INTEGER NOT NULL)")
        .execute(&mut db)
        .await?;
    let made = ids_at_chosen_times()?;
    let mut insert =
        sqlx::QueryBuilder::<sqlx::Sqlite>::new("INSERT INTO time_range (id, offset_ms) ");
    insert.push_values(scrambled(&made), |mut row, (id, offset)| {
        row.push_bind(id).push_bind(offset);
    });
    insert.build().execute(&mut db).await?;

    let layout = Layout::twitter();
    let read: Vec<Id> =
        sqlx::query_scalar("SELECT id FROM time_range WHERE id BETWEEN ? AND ? ORDER BY id")
            .bind(layout.first_id_at(at_ms(T0 + 3))?)
            .bind(layout.last_id_at(at_ms(T0 + 6))?)
            .fetch_all(&mut db)
            .await?;
    assert_eq!(read, made_in(&made, 3..7));
    Ok(())
}

#[tokio::test]
async fn sqlite_refuses_ids_above_i64_max_and_negative_values() -> TestResult {
    let mut db = sqlite().await?;
    sqlx::query("CREATE TABLE refused (id INTEGER PRIMARY KEY)")
        .execute(&mut db)
        .await?;
    for id in [Id::from_u64(u64::MAX), Id::from_u64(1 << 63)] {
        let mut insert = sqlx::query::<sqlx::Sqlite>("INSERT INTO refused (id) VALUES (?)");
        let error = insert.try_bind(id).unwrap_err();
        assert!(error.is::<ConvertIdError>(), "{error:?}");
        let error = sqlx::query("INSERT INTO refused (id) VALUES (?)")
            .bind(id)
            .execute(&mut db)
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("larger than i64::MAX"),
            "{error}"
        );
    }
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM refused")
        .fetch_one(&mut db)
        .await?;
    assert_eq!(stored, 0);

    sqlx::query("INSERT INTO refused (id) VALUES (-1), (-9223372036854775808)")
        .execute(&mut db)
        .await?;
    for value in [-1, i64::MIN] {
        let read = sqlx::query_scalar::<_, Id>("SELECT id FROM refused WHERE id = ?")
            .bind(value)
            .fetch_one(&mut db)
            .await;
        let Err(sqlx::Error::ColumnDecode { source, .. }) = read else {
            panic!("a negative INTEGER was read as an id: {read:?}");
        };
        assert!(source.is::<ConvertIdError>(), "{source:?}");
    }
    Ok(())
}
