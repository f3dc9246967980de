//! The `Id` newtype: its integer and byte conversions, and the errors of
//! converting and parsing one. Its string forms are in `id_string`.

use std::fmt;

/// A 64-bit ID made by a generator.
///
/// Its meaning (time, node, sequence) depends on the [`Layout`](crate::Layout)
/// that made it: decode it with [`Layout::decode`](crate::Layout::decode). IDs of
/// one layout sort by creation time; `Ord` compares the integers.
///
/// `Display` and `FromStr` use decimal; `{:x}` and `{:X}` give hex. The
/// fixed-width forms that sort as the number, [`to_base62`](Id::to_base62),
/// [`to_base32`](Id::to_base32) (Crockford) and [`to_hex`](Id::to_hex), are
/// listed under [`IdFormat`](crate::IdFormat).
///
/// ```
/// use flakeid::Id;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let id: Id = "175928847299117063".parse()?;
/// assert_eq!(id.to_u64(), 175_928_847_299_117_063);
/// assert_eq!(id.to_string(), "175928847299117063");
/// assert_eq!(format!("{id:x}"), "271065ac1020007");
/// assert_eq!(i64::try_from(id)?, 175_928_847_299_117_063);
/// # Ok(())
/// # }
/// ```
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(
    feature = "diesel",
    derive(diesel::expression::AsExpression, diesel::deserialize::FromSqlRow),
    diesel(sql_type = diesel::sql_types::BigInt)
)]
pub struct Id(u64);

impl Id {
    /// The smallest ID, 0.
    pub const MIN: Id = Id(0);
    /// The largest ID, 2^64 - 1.
    pub const MAX: Id = Id(u64::MAX);

    /// Wraps a raw integer.
    ///
    /// ```
    /// use flakeid::Id;
    ///
    /// assert_eq!(Id::from_u64(7).to_u64(), 7);
    /// ```
    #[inline]
    pub const fn from_u64(value: u64) -> Id {
        Id(value)
    }

    /// The raw integer.
    ///
    /// ```
    /// use flakeid::Id;
    ///
    /// assert_eq!(Id::from_u64(42).to_u64(), 42);
    /// ```
    #[inline]
    pub const fn to_u64(self) -> u64 {
        self.0
    }

    /// The ID as an `i64`, for signed `BIGINT` columns, if it is at most `i64::MAX`.
    ///
    /// Layouts with a spare top bit always fit; see
    /// [`Layout::last_signed_ms`](crate::Layout::last_signed_ms) for those without.
    ///
    /// ```
    /// use flakeid::Id;
    ///
    /// assert_eq!(Id::from_u64(5).to_i64(), Some(5));
    /// assert_eq!(Id::MAX.to_i64(), None);
    /// ```
    #[inline]
    pub const fn to_i64(self) -> Option<i64> {
        if self.0 <= i64::MAX as u64 {
            Some(self.0 as i64)
        } else {
            None
        }
    }

    /// The ID as 8 big-endian bytes: keys that sort byte by byte as the
    /// numbers do (Kafka record keys, RocksDB and other byte-ordered stores).
    ///
    /// ```
    /// use flakeid::Id;
    ///
    /// let (a, b) = (Id::from_u64(255), Id::from_u64(256));
    /// assert_eq!(a.to_be_bytes(), [0, 0, 0, 0, 0, 0, 0, 255]);
    /// assert!(a.to_be_bytes() < b.to_be_bytes()); // the order of the numbers
    /// ```
    #[inline]
    pub const fn to_be_bytes(self) -> [u8; 8] {
        self.0.to_be_bytes()
    }

    /// The ID [`to_be_bytes`](Id::to_be_bytes) wrote.
    ///
    /// ```
    /// use flakeid::Id;
    ///
    /// let id = Id::from_u64(175_928_847_299_117_063);
    /// assert_eq!(Id::from_be_bytes(id.to_be_bytes()), id);
    /// ```
    #[inline]
    pub const fn from_be_bytes(bytes: [u8; 8]) -> Id {
        Id(u64::from_be_bytes(bytes))
    }
}

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Id({})", self.0)
    }
}

impl From<u64> for Id {
    #[inline]
    fn from(value: u64) -> Id {
        Id(value)
    }
}

impl From<Id> for u64 {
    #[inline]
    fn from(id: Id) -> u64 {
        id.0
    }
}

impl TryFrom<Id> for i64 {
    type Error = ConvertIdError;

    #[inline]
    fn try_from(id: Id) -> Result<i64, ConvertIdError> {
        id.to_i64().ok_or(ConvertIdError { negative: false })
    }
}

impl TryFrom<i64> for Id {
    type Error = ConvertIdError;

    #[inline]
    fn try_from(value: i64) -> Result<Id, ConvertIdError> {
        u64::try_from(value)
            .map(Id)
            .map_err(|_| ConvertIdError { negative: true })
    }
}

/// A string is not a valid string form of an [`Id`](crate::Id) (decimal,
/// or one of the [`IdFormat`](crate::IdFormat)s).
///
/// ```
/// use flakeid::{Id, ParseIdError};
///
/// assert_eq!("".parse::<Id>(), Err(ParseIdError::Empty));
/// assert_eq!(
///     "12a4".parse::<Id>(),
///     Err(ParseIdError::InvalidCharacter { position: 2, character: 'a' })
/// );
/// assert_eq!("18446744073709551616".parse::<Id>(), Err(ParseIdError::Overflow));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseIdError {
    /// The string is empty.
    Empty,
    /// A character is not a digit of the form being parsed.
    InvalidCharacter {
        /// Its byte offset in the string.
        position: usize,
        /// The character.
        character: char,
    },
    /// The number is larger than 2^64 - 1.
    Overflow,
    /// The string has more characters than the form ever takes.
    TooLong {
        /// Its length in characters.
        length: usize,
        /// The most the form takes.
        max: usize,
    },
}

impl fmt::Display for ParseIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseIdError::Empty => write!(f, "cannot parse an id from an empty string"),
            ParseIdError::InvalidCharacter {
                position,
                character,
            } => write!(f, "invalid character {character:?} at position {position}"),
            ParseIdError::Overflow => write!(f, "the number is larger than 2^64 - 1"),
            ParseIdError::TooLong { length, max } => write!(
                f,
                "the string is {length} characters long; the form takes at most {max}"
            ),
        }
    }
}

impl std::error::Error for ParseIdError {}

/// An [`Id`](crate::Id) does not fit an `i64`, or an `i64` is negative.
///
/// ```
/// use flakeid::Id;
///
/// assert!(i64::try_from(Id::from(u64::MAX)).is_err());
/// assert!(Id::try_from(-1_i64).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvertIdError {
    pub(crate) negative: bool,
}

impl fmt::Display for ConvertIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.negative {
            write!(f, "a negative integer is not an id")
        } else {
            write!(f, "the id is larger than i64::MAX")
        }
    }
}

impl std::error::Error for ConvertIdError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_is_send_sync_and_word_sized() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Id>();
        assert_eq!(std::mem::size_of::<Id>(), 8);
    }

    #[test]
    fn signed_conversions_are_checked() {
        assert_eq!(i64::try_from(Id::from_u64(i64::MAX as u64)), Ok(i64::MAX));
        assert_eq!(
            i64::try_from(Id::from_u64(i64::MAX as u64 + 1)),
            Err(ConvertIdError { negative: false })
        );
        assert_eq!(Id::try_from(0_i64), Ok(Id::MIN));
        assert_eq!(Id::try_from(-1_i64), Err(ConvertIdError { negative: true }));
        assert_eq!(u64::from(Id::from(17_u64)), 17);
    }
}
