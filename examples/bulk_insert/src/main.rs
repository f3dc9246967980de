//! Bulk insert: IDs for many rows at once with `next_ids`, one
//! compare-and-swap per batch, written to PostgreSQL as multi-row `INSERT`s.
//!
//! ```text
//! export DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres
//! cargo run --release -p flakeid-bulk-insert           # 100,000 rows
//! cargo run --release -p flakeid-bulk-insert -- 5000   # 5,000 rows
//! ```
//!
//! It (re)creates the table `flakeid_bulk_insert` and leaves it there to look
//! at, prints the rows per second, then checks that `count(*)` is the number
//! of rows and that `ORDER BY id` gives them back in the order they were
//! made. The connection is plain TCP (`NoTls`). Without `DATABASE_URL` it
//! says how to run it and exits with status 2.
//!
//! A batch holds at most the rest of the current tick, so a loop asks again
//! until it has enough. IDs go into a signed `BIGINT` column through the
//! `postgres-types` feature's `ToSql` (Twitter's layout keeps the top bit
//! clear, so none is refused).

use std::process::ExitCode;
use std::time::Instant;

use flakeid::{Generator, Id, Layout};
use tokio_postgres::NoTls;
use tokio_postgres::types::ToSql;

/// Rows per `INSERT` statement (3 parameters each; PostgreSQL takes 65,535).
const ROWS_PER_STATEMENT: usize = 1_000;

const TABLE: &str = "flakeid_bulk_insert";

struct Order {
    id: Id,
    customer: i32,
    cents: i64,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<ExitCode, Box<dyn std::error::Error>> {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        eprintln!(
            "bulk_insert writes to a PostgreSQL database: set DATABASE_URL, for example\n  \
             DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \
             cargo run --release -p flakeid-bulk-insert -- [rows]\n\
             It (re)creates the table {TABLE} there."
        );
        return Ok(ExitCode::from(2));
    };
    let rows: usize = match std::env::args().nth(1) {
        Some(n) => n.parse().map_err(|e| format!("row count {n:?}: {e}"))?,
        None => 100_000,
    };
    if rows == 0 {
        return Err("the row count must be at least 1".into());
    }

    let (mut client, connection) = tokio_postgres::connect(&url, NoTls).await?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            eprintln!("connection: {e}");
        }
    });
    client
        .batch_execute(&format!(
            "DROP TABLE IF EXISTS {TABLE};
             CREATE TABLE {TABLE} (id BIGINT PRIMARY KEY, customer INT NOT NULL, cents BIGINT NOT NULL);"
        ))
        .await?;

    let generator = Generator::builder(Layout::twitter())
        .node_field("datacenter", 1)
        .node_field("worker", 4)
        .build()?;

    let started = Instant::now();
    let mut ids = Vec::with_capacity(rows);
    let mut batches = 0;
    while ids.len() < rows {
        ids.extend(generator.next_ids(rows - ids.len()));
        batches += 1;
    }
    let generating = started.elapsed();
    let orders: Vec<Order> = ids
        .iter()
        .enumerate()
        .map(|(i, &id)| Order {
            id,
            customer: (i % 977) as i32,
            cents: 100 + (i as i64 * 37) % 10_000,
        })
        .collect();

    // Rows inserted in ID order append to the primary-key index instead of
    // splitting pages all over it. One transaction; one prepared statement
    // for the full chunks.
    let inserting = Instant::now();
    let transaction = client.transaction().await?;
    let full = transaction.prepare(&insert_sql(ROWS_PER_STATEMENT)).await?;
    let mut statements = 0;
    for chunk in orders.chunks(ROWS_PER_STATEMENT) {
        let params: Vec<&(dyn ToSql + Sync)> = chunk
            .iter()
            .flat_map(|o| [&o.id as _, &o.customer as _, &o.cents as _])
            .collect();
        if chunk.len() == ROWS_PER_STATEMENT {
            transaction.execute(&full, &params).await?;
        } else {
            transaction
                .execute(&insert_sql(chunk.len()), &params)
                .await?;
        }
        statements += 1;
    }
    transaction.commit().await?;
    let inserted = inserting.elapsed();

    println!("{rows} IDs in {batches} batches ({generating:.1?})");
    println!(
        "{rows} rows in {statements} INSERTs in {inserted:.2?}: {:.0} rows/s",
        rows as f64 / inserted.as_secs_f64()
    );

    // What the database holds: every row, and in creation order by ID.
    let count: i64 = client
        .query_one(&format!("SELECT count(*) FROM {TABLE}"), &[])
        .await?
        .try_get(0)?;
    if count != rows as i64 {
        return Err(format!("count(*) is {count}, not {rows}").into());
    }
    let by_id: Vec<Id> = client
        .query(&format!("SELECT id FROM {TABLE} ORDER BY id"), &[])
        .await?
        .iter()
        .map(|row| row.try_get(0))
        .collect::<Result<_, _>>()?;
    if by_id != ids {
        return Err("ORDER BY id differs from the order the IDs were made in".into());
    }
    println!("checked: count(*) = {count}, ORDER BY id is creation order");

    let (first, last) = (ids[0], ids[ids.len() - 1]);
    println!("first: {first} = {}", generator.layout().decode(first)?);
    println!("last:  {last} = {}", generator.layout().decode(last)?);
    Ok(ExitCode::SUCCESS)
}

/// `INSERT INTO … VALUES ($1, $2, $3), ($4, $5, $6), …` for `rows` rows.
fn insert_sql(rows: usize) -> String {
    let mut sql = format!("INSERT INTO {TABLE} (id, customer, cents) VALUES ");
    for row in 0..rows {
        let p = row * 3;
        let sep = if row == 0 { "" } else { ", " };
        sql += &format!("{sep}(${}, ${}, ${})", p + 1, p + 2, p + 3);
    }
    sql
}
