//! [`Id::parse_any`]: reading an ID whose string form is not given, told by
//! the string's shape.

use std::fmt;

use super::IdFormat;
use crate::id::{Id, ParseIdError};

impl Id {
    /// Parses any string form without being told which, and says which it
    /// read. The form is told by the string's shape, never by trial:
    ///
    /// 1. ASCII digits only: decimal, whatever the length;
    /// 2. the widths flakeid writes: 16 characters hex, 13 base32, 11 base62;
    /// 3. `0x` or `0X` and then hex digits: hex.
    ///
    /// So every string [`IdFormat::encode`] writes reads back as its form,
    /// unless it is made only of digits; and a `0x` string of exactly 11 or
    /// 13 characters reads as base62 or base32. Where such input occurs,
    /// name the form with [`IdFormat::parse`].
    ///
    /// # Errors
    ///
    /// [`ParseAnyIdError::NoFormFits`] if the shape matches no form,
    /// [`ParseAnyIdError::NotInForm`] if the form the shape points to
    /// refuses the string (a bad character, say).
    ///
    /// ```
    /// use flakeid::{Id, IdFormat, ParseAnyIdError};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let id = Id::from_u64(175_928_847_299_117_063);
    /// assert_eq!(Id::parse_any("175928847299117063")?, (id, IdFormat::Decimal));
    /// assert_eq!(Id::parse_any("0x271065ac1020007")?, (id, IdFormat::Hex));
    /// assert_eq!(Id::parse_any("0Czks0tP37X")?, (id, IdFormat::Base62));
    /// let err = Id::parse_any("order-17").unwrap_err();
    /// assert_eq!(err, ParseAnyIdError::NoFormFits { length: 8 });
    /// # Ok(())
    /// # }
    /// ```
    pub fn parse_any(s: &str) -> Result<(Id, IdFormat), ParseAnyIdError> {
        let read = |form: IdFormat, text: &str| {
            form.parse(text)
                .map(|id| (id, form))
                .map_err(|error| ParseAnyIdError::NotInForm { form, error })
        };
        if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
            return read(IdFormat::Decimal, s);
        }
        let length = s.chars().count();
        // Hex is last: its written form never starts with `0x`.
        for form in [IdFormat::Base32, IdFormat::Base62] {
            if form.width() == Some(length) {
                return read(form, s);
            }
        }
        if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
            return read(IdFormat::Hex, hex);
        }
        if IdFormat::Hex.width() == Some(length) {
            return read(IdFormat::Hex, s);
        }
        Err(ParseAnyIdError::NoFormFits { length })
    }
}

/// [`Id::parse_any`] could not read a string in any form.
///
/// ```
/// use flakeid::{Id, IdFormat, ParseAnyIdError, ParseIdError};
///
/// let err = Id::parse_any("0Czk-0tP37X").unwrap_err();
/// assert_eq!(
///     err,
///     ParseAnyIdError::NotInForm {
///         form: IdFormat::Base62,
///         error: ParseIdError::InvalidCharacter { position: 4, character: '-' },
///     }
/// );
/// assert_eq!(
///     err.to_string(),
///     "read as base62 (11 characters), but: invalid character '-' at position 4"
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseAnyIdError {
    /// Not `0x` and hex, not digits only, and not of a fixed-width form's
    /// length (hex 16, base32 13, base62 11).
    NoFormFits {
        /// The string's length in characters.
        length: usize,
    },
    /// The form the string's shape points to refuses it.
    NotInForm {
        /// The form tried.
        form: IdFormat,
        /// What that form found wrong.
        error: ParseIdError,
    },
}

impl fmt::Display for ParseAnyIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseAnyIdError::NoFormFits { length: 0 } => {
                write!(f, "cannot parse an id from an empty string")
            }
            ParseAnyIdError::NoFormFits { length } => write!(
                f,
                "cannot tell the form of a {length}-character string: decimal is digits \
                 only, hex has 16 characters or a 0x prefix, base32 13, base62 11"
            ),
            ParseAnyIdError::NotInForm { form, error } => {
                let why = match form {
                    IdFormat::Decimal => "digits only",
                    IdFormat::Hex => "0x prefix or 16 characters",
                    IdFormat::Base32 => "13 characters",
                    IdFormat::Base62 => "11 characters",
                };
                write!(f, "read as {form} ({why}), but: {error}")
            }
        }
    }
}

impl std::error::Error for ParseAnyIdError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ParseAnyIdError::NotInForm { error, .. } => Some(error),
            ParseAnyIdError::NoFormFits { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id_string::tests::values;

    #[test]
    fn parse_any_reads_every_form_by_its_shape() {
        // Miri runs this about 3,000× slower; the edges and 40 values still
        // reach every form.
        let n = if cfg!(miri) { 40 } else { 2_000 };
        for value in values(n) {
            let id = Id::from_u64(value);
            for form in IdFormat::ALL {
                let text = form.encode(id);
                let digits_only = text.bytes().all(|b| b.is_ascii_digit());
                match Id::parse_any(&text) {
                    // Digits alone always read as decimal.
                    Ok((read, IdFormat::Decimal)) if digits_only => {
                        assert_eq!(read, IdFormat::Decimal.parse(&text).unwrap());
                    }
                    Ok((read, read_form)) => {
                        assert_eq!((read, read_form), (id, form), "{text}");
                        assert!(!digits_only);
                    }
                    Err(e) => panic!("{form} {text}: {e}"),
                }
            }
            let prefixed = format!("0x{:x}", value);
            if ![11, 13].contains(&prefixed.len()) {
                assert_eq!(
                    Id::parse_any(&prefixed),
                    Ok((id, IdFormat::Hex)),
                    "{prefixed}"
                );
            }
        }
        assert_eq!(
            Id::parse_any(""),
            Err(ParseAnyIdError::NoFormFits { length: 0 })
        );
        assert_eq!(
            Id::parse_any("0x"),
            Err(ParseAnyIdError::NotInForm {
                form: IdFormat::Hex,
                error: ParseIdError::Empty
            })
        );
        assert_eq!(
            Id::parse_any("18446744073709551616"),
            Err(ParseAnyIdError::NotInForm {
                form: IdFormat::Decimal,
                error: ParseIdError::Overflow
            })
        );
        // 13 characters with a base32 `U` (not in Crockford's alphabet).
        assert!(matches!(
            Id::parse_any("04W86BB0G400U"),
            Err(ParseAnyIdError::NotInForm {
                form: IdFormat::Base32,
                ..
            })
        ));
        assert_eq!(
            Id::parse_any("é"),
            Err(ParseAnyIdError::NoFormFits { length: 1 })
        );
    }
}
