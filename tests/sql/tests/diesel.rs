//! `Id` through Diesel (features `diesel`, `diesel-sqlite`): in a real
//! PostgreSQL server (Debian's `postgresql`, started by the test on
//! 127.0.0.1; Diesel's connection links libpq) and in SQLite in process.
//! The same checks on both: `Insertable` and `Queryable` structs, `filter`
//! by an `Id`, `ORDER BY id` equal to creation order, a time range with
//! `first_id_at`/`last_id_at`, and the refusals both ways.

use std::time::{Duration, UNIX_EPOCH};

use diesel::prelude::*;
use diesel::result::Error as DieselError;
use flakeid::{ConvertIdError, Generator, Id, Layout, ManualClock};
use flakeid_test_servers::Postgres;

/// The millisecond the IDs start at (2023-11-14).
const T0: u64 = 1_700_000_000_000;

diesel::table! {
    orders (id) {
        id -> BigInt,
        made -> Integer,
    }
}

#[derive(Insertable, Queryable, Selectable, Debug, Clone, Copy, PartialEq)]
#[diesel(table_name = orders)]
struct Order {
    id: Id,
    /// The order in which the generator made it.
    made: i32,
}

/// 300 orders over 10 ms from two nodes, in creation order.
fn orders() -> Vec<Order> {
    let clock = ManualClock::new(T0);
    let nodes = [1, 2].map(|node| {
        Generator::builder(Layout::twitter())
            .node_id(node)
            .clock(clock.clone())
            .build()
            .unwrap()
    });
    let mut made = Vec::new();
    for ms in 0..10 {
        clock.set_ms(T0 + ms);
        for _ in 0..15 {
            for generator in &nodes {
                let made_at = made.len() as i32;
                made.push(Order {
                    id: generator.next_id(),
                    made: made_at,
                });
            }
        }
    }
    made
}

/// Whether `e` or an error in its `source` chain is flakeid's
/// `ConvertIdError`.
fn caused_by_convert(e: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(e), |e| e.source()).any(|e| e.is::<ConvertIdError>())
}

/// Every check, on one connection (a macro: Diesel's bounds for a generic
/// function over backends would be longer than the checks).
macro_rules! check_on {
    ($conn:expr) => {{
        let conn = $conn;
        diesel::sql_query("CREATE TABLE orders (id BIGINT PRIMARY KEY, made INTEGER NOT NULL)")
            .execute(conn)
            .unwrap();
        let made = orders();
        // Inserted scrambled, so that the order read back is the IDs' own.
        let mut scrambled = made.clone();
        scrambled.reverse();
        scrambled.rotate_left(7);
        diesel::insert_into(orders::table)
            .values(&scrambled)
            .execute(conn)
            .unwrap();

        let read: Vec<Order> = orders::table.order(orders::id).load(conn).unwrap();
        assert_eq!(read.len(), made.len());
        // Two nodes in one tick order by node, not by creation: within a tick
        // the order is the IDs'; across ticks it is creation order.
        let tick = |id: Id| Layout::twitter().decode(id).unwrap().timestamp();
        assert!(read.windows(2).all(|w| tick(w[0].id) <= tick(w[1].id)));
        let mut expected = made.clone();
        expected.sort_by_key(|o| o.id);
        assert_eq!(read, expected);

        let one: Order = orders::table
            .filter(orders::id.eq(made[17].id))
            .first(conn)
            .unwrap();
        assert_eq!(one, made[17]);

        // A time range by ID alone: ms 3 to 5 inclusive.
        let layout = Layout::twitter();
        let at = |ms| UNIX_EPOCH + Duration::from_millis(T0 + ms);
        let window: Vec<Order> = orders::table
            .filter(orders::id.between(
                layout.first_id_at(at(3)).unwrap(),
                layout.last_id_at(at(5)).unwrap(),
            ))
            .order(orders::id)
            .load(conn)
            .unwrap();
        let mut in_window: Vec<Order> = made
            .iter()
            .copied()
            .filter(|o| (T0 + 3..=T0 + 5).contains(&layout.decode(o.id).unwrap().unix_ms()))
            .collect();
        in_window.sort_by_key(|o| o.id);
        assert_eq!(window, in_window);
        assert_eq!(window.len(), 90);

        // An ID above i64::MAX is refused before anything is sent.
        let refused = diesel::insert_into(orders::table)
            .values(&Order {
                id: Id::MAX,
                made: -1,
            })
            .execute(conn)
            .unwrap_err();
        match refused {
            DieselError::SerializationError(e) => assert!(caused_by_convert(&*e), "{e}"),
            other => panic!("expected a serialization error, got {other:?}"),
        }
        let count: i64 = orders::table.count().get_result(conn).unwrap();
        assert_eq!(count, made.len() as i64);

        // A negative BIGINT does not read as an Id.
        diesel::sql_query("INSERT INTO orders (id, made) VALUES (-5, -1)")
            .execute(conn)
            .unwrap();
        let negative = orders::table
            .filter(orders::made.eq(-1))
            .first::<Order>(conn)
            .unwrap_err();
        match negative {
            // Diesel names the field; the cause is ours.
            DieselError::DeserializationError(e) => assert!(caused_by_convert(&*e), "{e}"),
            other => panic!("expected a deserialization error, got {other:?}"),
        }
    }};
}

#[test]
fn diesel_on_a_real_postgresql() {
    let server = Postgres::start();
    check_on!(&mut PgConnection::establish(&server.url()).unwrap());
}

#[test]
fn diesel_on_sqlite_in_process() {
    check_on!(&mut SqliteConnection::establish(":memory:").unwrap());
}
