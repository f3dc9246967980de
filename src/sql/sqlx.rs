//! sqlx's `Type`, `Encode` and `Decode` for `Id`, on every database whose
//! `i64` has them, checked both ways.
//!
//! The impls are generic over `sqlx::Database`, so this crate needs only
//! sqlx-core: the user's own drivers (PostgreSQL, MySQL, SQLite) bring the
//! `i64` impls these delegate to.
//!
//! The examples below need a driver (SQLite's, in process), which this crate
//! does not depend on, so rustdoc does not run them here; `tests/sql` runs
//! the same calls against SQLite and PostgreSQL (`cargo test -p
//! flakeid-sql-tests`).

use ::sqlx::encode::IsNull;
use ::sqlx::error::BoxDynError;
use ::sqlx::{Database, Decode, Encode, Type};

use crate::id::Id;

/// An `Id` has the SQL type of an `i64`: a `BIGINT` (PostgreSQL's `INT8`,
/// SQLite's `INTEGER`), with the same compatible column types.
///
/// ```ignore
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use flakeid::{Generator, Id, Layout};
/// use sqlx::Connection;
///
/// let mut db = sqlx::SqliteConnection::connect("sqlite::memory:").await?;
/// sqlx::query("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT NOT NULL)")
///     .execute(&mut db)
///     .await?;
/// let generator = Generator::builder(Layout::twitter()).node_id(1).build()?;
/// let id = generator.next_id();
/// sqlx::query("INSERT INTO orders (id, item) VALUES (?, ?)")
///     .bind(id)
///     .bind("tea")
///     .execute(&mut db)
///     .await?;
/// let (read, item): (Id, String) = sqlx::query_as("SELECT id, item FROM orders")
///     .fetch_one(&mut db)
///     .await?;
/// assert_eq!((read, item.as_str()), (id, "tea"));
/// # Ok(())
/// # }
/// ```
impl<DB: Database> Type<DB> for Id
where
    i64: Type<DB>,
{
    fn type_info() -> DB::TypeInfo {
        <i64 as Type<DB>>::type_info()
    }

    fn compatible(ty: &DB::TypeInfo) -> bool {
        <i64 as Type<DB>>::compatible(ty)
    }
}

/// Binds an `Id` as the `i64` holding the same number.
///
/// # Errors
///
/// An ID above `i64::MAX` is a [`ConvertIdError`](crate::ConvertIdError)
/// ("the id is larger than i64::MAX"), never a negative number: see the
/// [`sql`](crate::sql) module. `Query::try_bind` returns it as it is;
/// `Query::bind` keeps its message and the query's `execute` or `fetch`
/// returns it, before anything reaches the database.
///
/// ```ignore
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use flakeid::{ConvertIdError, Id};
/// use sqlx::Connection;
///
/// let mut db = sqlx::SqliteConnection::connect("sqlite::memory:").await?;
/// sqlx::query("CREATE TABLE orders (id INTEGER PRIMARY KEY)").execute(&mut db).await?;
///
/// let mut insert = sqlx::query::<sqlx::Sqlite>("INSERT INTO orders (id) VALUES (?)");
/// let error = insert.try_bind(Id::MAX).unwrap_err();
/// assert!(error.is::<ConvertIdError>());
///
/// let inserted = sqlx::query("INSERT INTO orders (id) VALUES (?)")
///     .bind(Id::MAX)
///     .execute(&mut db)
///     .await;
/// assert!(inserted.unwrap_err().to_string().contains("the id is larger than i64::MAX"));
/// let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM orders").fetch_one(&mut db).await?;
/// assert_eq!(rows, 0);
/// # Ok(())
/// # }
/// ```
impl<'q, DB: Database> Encode<'q, DB> for Id
where
    i64: Encode<'q, DB>,
{
    fn encode_by_ref(&self, buf: &mut DB::ArgumentBuffer) -> Result<IsNull, BoxDynError> {
        // Refused before anything is written to `buf`.
        <i64 as Encode<'q, DB>>::encode(i64::try_from(*self)?, buf)
    }

    fn produces(&self) -> Option<DB::TypeInfo> {
        self.to_i64()
            .and_then(|value| <i64 as Encode<'q, DB>>::produces(&value))
    }

    fn size_hint(&self) -> usize {
        self.to_i64()
            .map_or(0, |value| <i64 as Encode<'q, DB>>::size_hint(&value))
    }
}

/// Reads an `i64` column as an `Id`.
///
/// # Errors
///
/// A negative value is a [`ConvertIdError`](crate::ConvertIdError) ("a
/// negative integer is not an id"), which sqlx reports as
/// `sqlx::Error::ColumnDecode`: no layout makes one.
///
/// ```ignore
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use flakeid::{ConvertIdError, Id};
/// use sqlx::Connection;
///
/// let mut db = sqlx::SqliteConnection::connect("sqlite::memory:").await?;
/// let id: Id = sqlx::query_scalar("SELECT 175928847299117063").fetch_one(&mut db).await?;
/// assert_eq!(id, Id::from_u64(175928847299117063));
///
/// let read = sqlx::query_scalar::<_, Id>("SELECT -1").fetch_one(&mut db).await;
/// let Err(sqlx::Error::ColumnDecode { source, .. }) = read else {
///     panic!("a negative id was read: {read:?}");
/// };
/// assert!(source.is::<ConvertIdError>());
/// # Ok(())
/// # }
/// ```
impl<'r, DB: Database> Decode<'r, DB> for Id
where
    i64: Decode<'r, DB>,
{
    fn decode(value: DB::ValueRef<'r>) -> Result<Id, BoxDynError> {
        Ok(Id::try_from(<i64 as Decode<'r, DB>>::decode(value)?)?)
    }
}
