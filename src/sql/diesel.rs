//! Diesel's `ToSql` and `FromSql` for `Id` as a `BigInt`, checked both ways
//! (feature `diesel`: PostgreSQL and MySQL; `diesel-sqlite`: SQLite too).
//! `Id` also derives Diesel's `AsExpression` (for `BigInt` and
//! `Nullable<BigInt>`) and `FromSqlRow`, so it goes into `Insertable` and
//! `Queryable` structs and `filter` expressions as an `i64` would.
//!
//! Writing is one impl per backend: Diesel's `ToSql` may let the value it
//! binds borrow from `self`, so an impl cannot hand it a converted `i64`
//! generically. PostgreSQL's and MySQL's hand the checked `i64` to Diesel's
//! own `i64` impl on a reborrowed output; SQLite's binds it as a value.
//! Reading is generic over every backend whose `i64` reads a `BigInt`.
//!
//! ```ignore
//! use diesel::prelude::*;
//! use flakeid::{Generator, Id, Layout};
//!
//! diesel::table! {
//!     orders (id) {
//!         id -> BigInt,
//!         item -> Text,
//!     }
//! }
//!
//! #[derive(Insertable, Queryable, Debug, PartialEq)]
//! #[diesel(table_name = orders)]
//! struct Order {
//!     id: Id,
//!     item: String,
//! }
//!
//! let generator = Generator::builder(Layout::twitter()).node_id(1).build()?;
//! let order = Order { id: generator.next_id(), item: "tea".into() };
//! diesel::insert_into(orders::table).values(&order).execute(&mut conn)?;
//! let read: Order = orders::table.filter(orders::id.eq(order.id)).first(&mut conn)?;
//! assert_eq!(read, order);
//! ```
//!
//! (`tests/sql/tests/diesel.rs` runs this on a real PostgreSQL and on SQLite
//! in process; rustdoc cannot, as this crate does not depend on a driver.)

use diesel::backend::Backend;
use diesel::deserialize::{self, FromSql};
use diesel::serialize::{self, Output, ToSql};
use diesel::sql_types::BigInt;

use crate::id::Id;

/// Binds an `Id` as the `BIGINT` (`INT8`) holding the same number.
///
/// # Errors
///
/// An ID above `i64::MAX` is a [`ConvertIdError`](crate::ConvertIdError)
/// ("the id is larger than i64::MAX"), never a negative number: see the
/// [`sql`](crate::sql) module. Diesel reports it as
/// `diesel::result::Error::SerializationError` and sends nothing.
impl ToSql<BigInt, diesel::pg::Pg> for Id {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, diesel::pg::Pg>) -> serialize::Result {
        ToSql::<BigInt, diesel::pg::Pg>::to_sql(&i64::try_from(*self)?, &mut out.reborrow())
    }
}

/// Binds an `Id` as the `BIGINT` holding the same number.
///
/// # Errors
///
/// As for PostgreSQL: an ID above `i64::MAX` is refused.
impl ToSql<BigInt, diesel::mysql::Mysql> for Id {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, diesel::mysql::Mysql>) -> serialize::Result {
        ToSql::<BigInt, diesel::mysql::Mysql>::to_sql(&i64::try_from(*self)?, &mut out.reborrow())
    }
}

/// Binds an `Id` as the `INTEGER` holding the same number (feature
/// `diesel-sqlite`).
///
/// # Errors
///
/// As for PostgreSQL: an ID above `i64::MAX` is refused.
#[cfg(feature = "diesel-sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "diesel-sqlite")))]
impl ToSql<BigInt, diesel::sqlite::Sqlite> for Id {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, diesel::sqlite::Sqlite>) -> serialize::Result {
        out.set_value(i64::try_from(*self)?);
        Ok(serialize::IsNull::No)
    }
}

/// Reads a `BIGINT` as an `Id`, on every backend whose `i64` reads one.
///
/// # Errors
///
/// A negative value is a [`ConvertIdError`](crate::ConvertIdError) ("a
/// negative integer is not an id"), which Diesel reports as
/// `diesel::result::Error::DeserializationError`: no layout makes one.
impl<DB: Backend> FromSql<BigInt, DB> for Id
where
    i64: FromSql<BigInt, DB>,
{
    fn from_sql(bytes: DB::RawValue<'_>) -> deserialize::Result<Id> {
        Ok(Id::try_from(<i64 as FromSql<BigInt, DB>>::from_sql(
            bytes,
        )?)?)
    }
}
