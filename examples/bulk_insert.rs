//! Bulk insert: IDs for many rows at once with `next_ids`, one
//! compare-and-swap per batch, written as multi-row SQL `INSERT`s.
//!
//! ```text
//! cargo run --release --example bulk_insert            # 100,000 rows
//! cargo run --release --example bulk_insert -- 5000    # 5,000 rows
//! ```
//!
//! A batch holds at most the rest of the current tick, so a loop asks again
//! until it has enough. IDs go into a signed `BIGINT` column as `i64`
//! (Twitter's layout keeps the top bit clear, so the conversion never fails).

use std::fmt::Write as _;
use std::time::Instant;

use flakeid::{Generator, Id, Layout};

/// Rows per `INSERT` statement.
const ROWS_PER_STATEMENT: usize = 1_000;

struct Order {
    id: Id,
    customer: u32,
    cents: u64,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rows: usize = match std::env::args().nth(1) {
        Some(n) => n.parse().map_err(|e| format!("row count {n:?}: {e}"))?,
        None => 100_000,
    };
    if rows == 0 {
        return Err("the row count must be at least 1".into());
    }
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
    let took = started.elapsed();

    let orders: Vec<Order> = ids
        .into_iter()
        .enumerate()
        .map(|(i, id)| Order {
            id,
            customer: (i % 977) as u32,
            cents: 100 + (i as u64 * 37) % 10_000,
        })
        .collect();

    let mut statements = Vec::new();
    for chunk in orders.chunks(ROWS_PER_STATEMENT) {
        let mut sql = String::from("INSERT INTO orders (id, customer, cents) VALUES ");
        for (i, order) in chunk.iter().enumerate() {
            let id = i64::try_from(order.id)?;
            let sep = if i == 0 { "" } else { ", " };
            write!(sql, "{sep}({id}, {}, {})", order.customer, order.cents)?;
        }
        sql.push(';');
        statements.push(sql);
    }

    // Rows inserted in ID order append to the primary-key index instead of
    // splitting pages all over it.
    assert!(orders.windows(2).all(|w| w[0].id < w[1].id));
    let first = generator.layout().decode(orders[0].id)?;
    let last = generator.layout().decode(orders[orders.len() - 1].id)?;
    println!(
        "{rows} IDs in {batches} batches ({:.1?}), {} statements",
        took,
        statements.len()
    );
    println!("first: {} = {first}", orders[0].id);
    println!("last:  {} = {last}", orders[orders.len() - 1].id);
    println!("{}…", &statements[0][..statements[0].len().min(120)]);
    Ok(())
}
