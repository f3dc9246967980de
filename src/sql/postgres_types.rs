//! `ToSql` and `FromSql` for `Id`: an `INT8` (`BIGINT`), checked both ways.

use std::error::Error;

use bytes::BytesMut;
use postgres_types::{FromSql, IsNull, ToSql, Type, accepts, to_sql_checked};

use crate::id::Id;

/// Writes an `Id` as an `INT8` (`BIGINT`) holding the same number, for
/// rust-postgres, tokio-postgres and other users of postgres-types.
///
/// # Errors
///
/// An ID above `i64::MAX` is a [`ConvertIdError`](crate::ConvertIdError)
/// ("the id is larger than i64::MAX"), never a negative number: see the
/// [`sql`](crate::sql) module. A parameter of another type than `INT8` is
/// postgres-types' `WrongType`.
///
/// ```
/// use bytes::BytesMut;
/// use flakeid::{ConvertIdError, Id};
/// use postgres_types::{ToSql, Type};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
/// let mut buf = BytesMut::new();
/// Id::from_u64(175928847299117063).to_sql_checked(&Type::INT8, &mut buf)?;
/// assert_eq!(buf[..], 175928847299117063_i64.to_be_bytes());
///
/// let refused = Id::MAX.to_sql_checked(&Type::INT8, &mut BytesMut::new());
/// let error = refused.err().expect("an id above i64::MAX is refused");
/// assert!(error.is::<ConvertIdError>());
/// assert_eq!(error.to_string(), "the id is larger than i64::MAX");
/// assert!(Id::from_u64(7).to_sql_checked(&Type::INT4, &mut BytesMut::new()).is_err());
/// # Ok(())
/// # }
/// ```
impl ToSql for Id {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        // Refused before anything is written to `out`.
        i64::try_from(*self)?.to_sql(ty, out)
    }

    accepts!(INT8);

    to_sql_checked!();
}

/// Reads an `INT8` (`BIGINT`) as an `Id`.
///
/// # Errors
///
/// A negative value is a [`ConvertIdError`](crate::ConvertIdError) ("a
/// negative integer is not an id"): no layout makes one. A column of another
/// type than `INT8` is refused by the client before this runs (`accepts`).
///
/// ```
/// use flakeid::{ConvertIdError, Id};
/// use postgres_types::{FromSql, Type};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
/// let id = Id::from_sql(&Type::INT8, &175928847299117063_i64.to_be_bytes())?;
/// assert_eq!(id, Id::from_u64(175928847299117063));
///
/// let error = Id::from_sql(&Type::INT8, &(-1_i64).to_be_bytes()).unwrap_err();
/// assert!(error.is::<ConvertIdError>());
/// assert_eq!(error.to_string(), "a negative integer is not an id");
/// assert!(!<Id as FromSql>::accepts(&Type::INT4));
/// # Ok(())
/// # }
/// ```
impl<'a> FromSql<'a> for Id {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Id, Box<dyn Error + Sync + Send>> {
        Ok(Id::try_from(i64::from_sql(ty, raw)?)?)
    }

    accepts!(INT8);
}
