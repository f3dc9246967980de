//! The string forms of an [`Id`]: `Display`, `FromStr` and `{:x}`, and the
//! forms of [`IdFormat`] (decimal, hex, Crockford base32, base62), formatted
//! into a stack buffer ([`IdString`]) and parsed back with typed errors.

use std::fmt;
use std::str::FromStr;

use crate::id::{Id, ParseIdError};

mod buffer;
mod parse_any;

pub use buffer::IdString;
use buffer::MAX_LEN;
pub use parse_any::ParseAnyIdError;

const DIGITS: &[u8; 10] = b"0123456789";
const HEX: &[u8; 16] = b"0123456789abcdef";
/// Douglas Crockford's base32 alphabet: no I, L, O (read as 1, 1, 0) or U.
const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Marks a byte that is not a digit in a decoding table.
const NOT_A_DIGIT: u8 = u8::MAX;

/// A byte -> digit value table for `alphabet`, optionally also accepting
/// lowercase for its uppercase letters.
const fn table(alphabet: &[u8], fold_case: bool) -> [u8; 256] {
    let mut t = [NOT_A_DIGIT; 256];
    let mut i = 0;
    while i < alphabet.len() {
        let c = alphabet[i];
        t[c as usize] = i as u8;
        if fold_case {
            t[c.to_ascii_lowercase() as usize] = i as u8;
            t[c.to_ascii_uppercase() as usize] = i as u8;
        }
        i += 1;
    }
    t
}

const DECIMAL_TABLE: [u8; 256] = table(DIGITS, false);
const HEX_TABLE: [u8; 256] = table(HEX, true);
const BASE62_TABLE: [u8; 256] = table(BASE62, false);
const CROCKFORD_TABLE: [u8; 256] = {
    let mut t = table(CROCKFORD, true);
    // Crockford's decoding rule: letters easily misread as digits are read as
    // those digits.
    t[b'I' as usize] = 1;
    t[b'i' as usize] = 1;
    t[b'L' as usize] = 1;
    t[b'l' as usize] = 1;
    t[b'O' as usize] = 0;
    t[b'o' as usize] = 0;
    t
};

/// A string form of an [`Id`].
///
/// `Display` and `FromStr` use decimal. Three more forms print into a stack
/// buffer ([`IdString`], no allocation) and parse back with a
/// [`ParseIdError`] that says what is wrong: `Empty`, `TooLong { length,
/// max }`, `InvalidCharacter { position, character }` or `Overflow`.
///
/// | form | method | alphabet | width | sorts as the number |
/// |---|---|---|---|---|
/// | decimal | `to_string()`, `parse()` | `0-9` | 1–20 | no (`"9" > "10"`) |
/// | hex | [`to_hex()`](Id::to_hex), [`Id::parse_hex`] | `0-9a-f` (parses either case) | 16, zero-padded | yes |
/// | Crockford base32 | [`to_base32()`](Id::to_base32), [`Id::parse_base32`] | `0-9A-Z` without `I L O U` (parses either case; `I`, `L` read as 1, `O` as 0) | 13, zero-padded | yes |
/// | base62 | [`to_base62()`](Id::to_base62), [`Id::parse_base62`] | `0-9A-Za-z`, case-sensitive | 11, zero-padded | yes, in byte order |
///
/// The fixed-width forms ([`width`](IdFormat::width) is `Some`) keep their
/// alphabets in ASCII order, so comparing the strings byte by byte (`str`'s
/// `Ord`, SQL's `COLLATE "C"`, `sort` with `LC_ALL=C`) compares the IDs.
/// Base62 needs a case-sensitive, byte-wise collation (`COLLATE "C"` in
/// PostgreSQL); a case-insensitive or locale-aware one breaks its order and
/// even its uniqueness.
///
/// ```
/// use flakeid::{Id, IdFormat};
///
/// # fn main() -> Result<(), flakeid::ParseIdError> {
/// let id = Id::from_u64(175928847299117063);
/// assert_eq!(id.to_base62(), "0Czks0tP37X"); // URL-safe, 11 characters
/// assert_eq!(id.to_base32(), "04W86BB0G4007");
/// assert_eq!(id.to_hex(), "0271065ac1020007");
/// assert_eq!(Id::parse_base32("04w86bb0g4oo7")?, id);
/// assert_eq!(IdFormat::Base62.parse("0Czks0tP37X")?, id);
/// assert!(Id::from_u64(9).to_base62() < Id::from_u64(10).to_base62());
/// # Ok(())
/// # }
/// ```
///
/// Every form round-trips:
///
/// ```
/// use flakeid::{Id, IdFormat};
///
/// # fn main() -> Result<(), flakeid::ParseIdError> {
/// let id = Id::from_u64(175_928_847_299_117_063);
/// for format in IdFormat::ALL {
///     let text = format.encode(id);
///     assert_eq!(format.parse(&text)?, id);
/// }
/// assert_eq!(IdFormat::Base62.encode(id), "0Czks0tP37X");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IdFormat {
    /// Base 10, 1 to 20 digits, no padding: what `Display` and `FromStr` use.
    Decimal,
    /// Base 16, 16 lowercase digits, zero-padded. Parsing accepts either case
    /// and 1 to 16 digits, without a `0x` prefix.
    Hex,
    /// Douglas Crockford's base32 (`0-9A-Z` without `I L O U`), 13 uppercase
    /// characters, zero-padded. Parsing accepts either case, reads `I` and `L`
    /// as 1 and `O` as 0 (Crockford's rule for misread characters), and takes
    /// 1 to 13 characters; hyphens are not accepted.
    Base32,
    /// Base 62 with the alphabet `0-9A-Za-z` in ASCII order, 11 characters,
    /// zero-padded: the shortest URL-safe form. Case-sensitive.
    Base62,
}

impl IdFormat {
    /// Every form, in the order listed.
    ///
    /// ```
    /// use flakeid::IdFormat;
    ///
    /// let names: Vec<&str> = IdFormat::ALL.iter().map(|f| f.name()).collect();
    /// assert_eq!(names, ["decimal", "hex", "base32", "base62"]);
    /// ```
    pub const ALL: [IdFormat; 4] = [
        IdFormat::Decimal,
        IdFormat::Hex,
        IdFormat::Base32,
        IdFormat::Base62,
    ];

    /// The form's lowercase name: `decimal`, `hex`, `base32`, `base62`.
    ///
    /// ```
    /// use flakeid::IdFormat;
    ///
    /// assert_eq!(IdFormat::Base32.name(), "base32");
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            IdFormat::Decimal => "decimal",
            IdFormat::Hex => "hex",
            IdFormat::Base32 => "base32",
            IdFormat::Base62 => "base62",
        }
    }

    /// The fixed width of the formatted string, or `None` for decimal, whose
    /// width varies. The fixed-width forms sort as the numbers do.
    ///
    /// ```
    /// use flakeid::{Id, IdFormat};
    ///
    /// assert_eq!(IdFormat::Base62.width(), Some(11));
    /// assert_eq!(IdFormat::Decimal.width(), None);
    /// let (a, b) = (Id::from_u64(9), Id::from_u64(10));
    /// assert!(IdFormat::Base62.encode(a) < IdFormat::Base62.encode(b));
    /// assert!(IdFormat::Decimal.encode(a) > IdFormat::Decimal.encode(b));
    /// ```
    pub const fn width(self) -> Option<usize> {
        match self {
            IdFormat::Decimal => None,
            _ => Some(self.max_len()),
        }
    }

    /// The most characters the form takes (and, for the fixed-width forms,
    /// the most parsing accepts).
    ///
    /// ```
    /// use flakeid::IdFormat;
    ///
    /// assert_eq!(IdFormat::Decimal.max_len(), 20);
    /// assert_eq!(IdFormat::Base32.max_len(), 13);
    /// ```
    pub const fn max_len(self) -> usize {
        match self {
            IdFormat::Decimal => MAX_LEN,
            IdFormat::Hex => 16,
            IdFormat::Base32 => 13,
            IdFormat::Base62 => 11,
        }
    }

    /// Formats `id` in this form, into a stack buffer (no allocation).
    ///
    /// ```
    /// use flakeid::{Id, IdFormat};
    ///
    /// let id = Id::from_u64(175_928_847_299_117_063);
    /// assert_eq!(IdFormat::Hex.encode(id), "0271065ac1020007");
    /// assert_eq!(IdFormat::Base32.encode(id), "04W86BB0G4007");
    /// ```
    pub const fn encode(self, id: Id) -> IdString {
        // A constant radix per form turns the divisions into multiplications.
        // The fixed-width forms are padded to their full width.
        let width = match self {
            IdFormat::Decimal => 1,
            _ => self.max_len(),
        };
        match self {
            IdFormat::Decimal => encode::<10>(DIGITS, id.to_u64(), width),
            IdFormat::Hex => encode::<16>(HEX, id.to_u64(), width),
            IdFormat::Base32 => encode::<32>(CROCKFORD, id.to_u64(), width),
            IdFormat::Base62 => encode::<62>(BASE62, id.to_u64(), width),
        }
    }

    /// Parses a string in this form.
    ///
    /// Leading zeros may be left out of the fixed-width forms: `"7"` is a
    /// valid base62 ID. Decimal is parsed exactly as `str::parse::<Id>()`
    /// does, which accepts any number of leading zeros.
    ///
    /// # Errors
    ///
    /// [`ParseIdError::Empty`] for an empty string,
    /// [`ParseIdError::TooLong`] for more characters than
    /// [`max_len`](IdFormat::max_len) (fixed-width forms only),
    /// [`ParseIdError::InvalidCharacter`]
    /// with the first character that is not a digit of the form and its
    /// position, and [`ParseIdError::Overflow`] for a value above 2^64 − 1.
    ///
    /// ```
    /// use flakeid::{Id, IdFormat, ParseIdError};
    ///
    /// assert_eq!(IdFormat::Base32.parse("04w86bb0g4007"), Ok(Id::from_u64(175_928_847_299_117_063)));
    /// assert_eq!(
    ///     IdFormat::Base32.parse("04U"),
    ///     Err(ParseIdError::InvalidCharacter { position: 2, character: 'U' })
    /// );
    /// assert_eq!(IdFormat::Base62.parse("M0000000000"), Err(ParseIdError::Overflow));
    /// assert_eq!(
    ///     IdFormat::Hex.parse("00000000000000001"),
    ///     Err(ParseIdError::TooLong { length: 17, max: 16 })
    /// );
    /// ```
    pub const fn parse(self, s: &str) -> Result<Id, ParseIdError> {
        let bytes = s.as_bytes();
        if bytes.is_empty() {
            return Err(ParseIdError::Empty);
        }
        // Decimal has no width, so leading zeros are unlimited, as in `str::parse`.
        if let Some(max) = self.width()
            && bytes.len() > max
        {
            let length = char_count(bytes);
            // A multi-byte character makes the byte length overstate; such a
            // string is reported for that character below.
            if length > max {
                return Err(ParseIdError::TooLong { length, max });
            }
        }
        match self {
            IdFormat::Decimal => parse::<10>(s, &DECIMAL_TABLE),
            IdFormat::Hex => parse::<16>(s, &HEX_TABLE),
            IdFormat::Base32 => parse::<32>(s, &CROCKFORD_TABLE),
            IdFormat::Base62 => parse::<62>(s, &BASE62_TABLE),
        }
    }
}

/// Digits of `value` in base `RADIX`, right-aligned, at least `min_width` of
/// them (padded with the zero digit).
const fn encode<const RADIX: u64>(alphabet: &[u8], mut value: u64, min_width: usize) -> IdString {
    let mut buf = [0u8; MAX_LEN];
    let mut start = MAX_LEN;
    while start > MAX_LEN - min_width || value != 0 {
        start -= 1;
        buf[start] = alphabet[(value % RADIX) as usize];
        value /= RADIX;
    }
    IdString {
        buf,
        start: start as u8,
    }
}

/// Reads the digits of `s` (already checked to be non-empty and short
/// enough) through `table`.
const fn parse<const RADIX: u64>(s: &str, table: &[u8; 256]) -> Result<Id, ParseIdError> {
    let bytes = s.as_bytes();
    let mut value: u64 = 0;
    let mut i = 0;
    while i < bytes.len() {
        let digit = table[bytes[i] as usize];
        if digit == NOT_A_DIGIT {
            // Every byte before `i` is an ASCII digit, so `i` starts a character.
            return Err(ParseIdError::InvalidCharacter {
                position: i,
                character: char_at(s, i),
            });
        }
        value = match value.checked_mul(RADIX) {
            Some(v) => match v.checked_add(digit as u64) {
                Some(v) => v,
                None => return Err(ParseIdError::Overflow),
            },
            None => return Err(ParseIdError::Overflow),
        };
        i += 1;
    }
    Ok(Id::from_u64(value))
}

impl fmt::Display for IdFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// The character that starts at byte `i` of `s` (a replacement character if `i`
/// falls inside a multi-byte character, which callers never pass).
const fn char_at(s: &str, i: usize) -> char {
    let b = s.as_bytes();
    let lead = b[i];
    let (len, init) = if lead < 0x80 {
        (1, lead as u32)
    } else if lead >> 5 == 0b110 {
        (2, (lead & 0x1f) as u32)
    } else if lead >> 4 == 0b1110 {
        (3, (lead & 0x0f) as u32)
    } else {
        (4, (lead & 0x07) as u32)
    };
    if i + len > b.len() {
        return char::REPLACEMENT_CHARACTER;
    }
    let mut code = init;
    let mut k = 1;
    while k < len {
        code = (code << 6) | (b[i + k] & 0x3f) as u32;
        k += 1;
    }
    match char::from_u32(code) {
        Some(c) => c,
        None => char::REPLACEMENT_CHARACTER,
    }
}

/// The characters of UTF-8 `bytes` (counts bytes that do not continue a character).
const fn char_count(bytes: &[u8]) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] & 0xC0 != 0x80 {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The string forms; see [`IdFormat`] for widths and order.
impl Id {
    /// Parses the decimal form, like `str::parse` but usable in `const` context.
    ///
    /// Accepts only ASCII digits: no sign, no spaces, no separators.
    ///
    /// # Errors
    ///
    /// [`ParseIdError`] for an empty string, a non-digit, or a value above 2^64 - 1.
    ///
    /// ```
    /// use flakeid::{Id, ParseIdError};
    ///
    /// assert_eq!(Id::parse_decimal("123"), Ok(Id::from_u64(123)));
    /// assert_eq!(Id::parse_decimal("+1"), Err(ParseIdError::InvalidCharacter { position: 0, character: '+' }));
    /// ```
    pub const fn parse_decimal(s: &str) -> Result<Id, ParseIdError> {
        IdFormat::Decimal.parse(s)
    }

    /// The 11-character base62 form (`0-9A-Za-z`), zero-padded so it sorts
    /// as the number in byte order. The shortest URL-safe form.
    ///
    /// ```
    /// use flakeid::Id;
    ///
    /// # fn main() -> Result<(), flakeid::ParseIdError> {
    /// let id = Id::from_u64(175_928_847_299_117_063);
    /// assert_eq!(id.to_base62(), "0Czks0tP37X");
    /// assert_eq!(Id::parse_base62(&id.to_base62())?, id);
    /// assert_eq!(Id::MAX.to_base62(), "LygHa16AHYF");
    /// # Ok(())
    /// # }
    /// ```
    pub const fn to_base62(self) -> IdString {
        IdFormat::Base62.encode(self)
    }

    /// The 13-character Crockford base32 form, uppercase and zero-padded, so
    /// it sorts as the number.
    ///
    /// ```
    /// use flakeid::Id;
    ///
    /// # fn main() -> Result<(), flakeid::ParseIdError> {
    /// let id = Id::from_u64(175_928_847_299_117_063);
    /// assert_eq!(id.to_base32(), "04W86BB0G4007");
    /// assert_eq!(Id::parse_base32("04w86bb0g4oo7")?, id); // any case; O reads as 0
    /// # Ok(())
    /// # }
    /// ```
    pub const fn to_base32(self) -> IdString {
        IdFormat::Base32.encode(self)
    }

    /// The 16-digit lowercase hex form, zero-padded so it sorts as the
    /// number (unlike `{:x}`, which drops leading zeros).
    ///
    /// ```
    /// use flakeid::Id;
    ///
    /// let id = Id::from_u64(175_928_847_299_117_063);
    /// assert_eq!(id.to_hex(), "0271065ac1020007");
    /// assert_eq!(format!("{id:x}"), "271065ac1020007");
    /// ```
    pub const fn to_hex(self) -> IdString {
        IdFormat::Hex.encode(self)
    }

    /// Parses the base62 form (1 to 11 characters of `0-9A-Za-z`; case matters).
    ///
    /// # Errors
    ///
    /// As [`IdFormat::parse`].
    ///
    /// ```
    /// use flakeid::{Id, ParseIdError};
    ///
    /// assert_eq!(Id::parse_base62("0Czks0tP37X"), Ok(Id::from_u64(175_928_847_299_117_063)));
    /// assert_eq!(
    ///     Id::parse_base62("0Czk-0tP37X"),
    ///     Err(ParseIdError::InvalidCharacter { position: 4, character: '-' })
    /// );
    /// ```
    pub const fn parse_base62(s: &str) -> Result<Id, ParseIdError> {
        IdFormat::Base62.parse(s)
    }

    /// Parses the Crockford base32 form (1 to 13 characters, any case; `I`
    /// and `L` read as 1, `O` as 0).
    ///
    /// # Errors
    ///
    /// As [`IdFormat::parse`].
    ///
    /// ```
    /// use flakeid::{Id, ParseIdError};
    ///
    /// assert_eq!(Id::parse_base32("04W86BB0G4007"), Ok(Id::from_u64(175_928_847_299_117_063)));
    /// assert_eq!(Id::parse_base32("G000000000000"), Err(ParseIdError::Overflow));
    /// ```
    pub const fn parse_base32(s: &str) -> Result<Id, ParseIdError> {
        IdFormat::Base32.parse(s)
    }

    /// Parses the hex form (1 to 16 digits, any case, no `0x`).
    ///
    /// # Errors
    ///
    /// As [`IdFormat::parse`].
    ///
    /// ```
    /// use flakeid::{Id, ParseIdError};
    ///
    /// assert_eq!(Id::parse_hex("271065AC1020007"), Ok(Id::from_u64(175_928_847_299_117_063)));
    /// assert_eq!(Id::parse_hex(""), Err(ParseIdError::Empty));
    /// ```
    pub const fn parse_hex(s: &str) -> Result<Id, ParseIdError> {
        IdFormat::Hex.parse(s)
    }
}

/// Decimal, without allocating (the standard integer formatting writes
/// through a stack buffer).
impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.to_u64(), f)
    }
}

impl fmt::LowerHex for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::LowerHex::fmt(&self.to_u64(), f)
    }
}

impl fmt::UpperHex for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::UpperHex::fmt(&self.to_u64(), f)
    }
}

impl FromStr for Id {
    type Err = ParseIdError;

    fn from_str(s: &str) -> Result<Id, ParseIdError> {
        Id::parse_decimal(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reproducible test values: edge cases, then seeded draws of every
    /// magnitude, so short numbers are exercised too.
    pub(super) fn values(n: usize) -> impl Iterator<Item = u64> {
        let mut rng = flakeid_test_servers::Rng::new(0x1234_5678_9abc_def0);
        let edges = [0, 1, 9, 10, 61, 62, 63, 1 << 53, i64::MAX as u64, u64::MAX];
        edges.into_iter().chain((0..n).map(move |_| {
            let x = rng.next_u64();
            x >> (x % 64)
        }))
    }

    #[test]
    fn every_form_round_trips() {
        let n = if cfg!(miri) { 50 } else { 20_000 };
        for v in values(n) {
            let id = Id::from_u64(v);
            for format in IdFormat::ALL {
                let text = format.encode(id);
                assert_eq!(format.parse(&text), Ok(id), "{format} {text}");
                if let Some(width) = format.width() {
                    assert_eq!(text.len(), width, "{format} {text}");
                }
            }
            assert_eq!(IdFormat::Decimal.encode(id), id.to_string().as_str());
            assert_eq!(id.to_hex(), format!("{v:016x}").as_str());
        }
    }

    #[test]
    fn fixed_width_forms_sort_as_the_numbers() {
        let n = if cfg!(miri) { 50 } else { 5_000 };
        let ids: Vec<u64> = values(n).collect();
        for pair in ids.windows(2) {
            let (a, b) = (Id::from_u64(pair[0]), Id::from_u64(pair[1]));
            for format in [IdFormat::Hex, IdFormat::Base32, IdFormat::Base62] {
                assert_eq!(
                    a.cmp(&b),
                    format.encode(a).cmp(&format.encode(b)),
                    "{format}: {a:?} vs {b:?}"
                );
            }
        }
        // Decimal does not, which is why it is not listed as fixed width.
        let (nine, ten) = (Id::from_u64(9), Id::from_u64(10));
        assert!(IdFormat::Decimal.encode(nine) > IdFormat::Decimal.encode(ten));
    }

    #[test]
    fn alphabets_are_in_ascii_order() {
        let alphabets: [&[u8]; 4] = [DIGITS, HEX, CROCKFORD, BASE62];
        for alphabet in alphabets {
            assert!(alphabet.windows(2).all(|w| w[0] < w[1]));
        }
    }

    #[test]
    fn known_values_match_other_implementations() {
        let id = Id::from_u64(175_928_847_299_117_063);
        // `printf '%016x'`, and the ULID crate's Crockford alphabet.
        assert_eq!(id.to_hex(), "0271065ac1020007");
        assert_eq!(Id::from_u64(31).to_base32(), "000000000000Z");
        assert_eq!(Id::from_u64(32).to_base32(), "0000000000010");
        assert_eq!(Id::MAX.to_base32(), "FZZZZZZZZZZZZ");
        assert_eq!(Id::from_u64(61).to_base62(), "0000000000z");
        assert_eq!(Id::from_u64(62).to_base62(), "00000000010");
        assert_eq!(Id::MIN.to_base62(), "00000000000");
        assert_eq!(IdFormat::Decimal.encode(Id::MIN), "0");
        assert_eq!(IdFormat::Decimal.encode(Id::MAX), "18446744073709551615");
    }

    #[test]
    fn parse_names_what_is_wrong() {
        use ParseIdError::*;
        for format in IdFormat::ALL {
            assert_eq!(format.parse(""), Err(Empty), "{format}");
            assert_eq!(
                format.parse(&"0".repeat(format.max_len())),
                Ok(Id::MIN),
                "{format}"
            );
        }
        // Decimal is FromStr: leading zeros are fine, and a number too large
        // is an overflow however it is written.
        assert_eq!(IdFormat::Decimal.parse(&"0".repeat(40)), Ok(Id::MIN));
        assert_eq!(IdFormat::Decimal.parse(&"9".repeat(40)), Err(Overflow));
        for format in [IdFormat::Hex, IdFormat::Base32, IdFormat::Base62] {
            let long = "0".repeat(format.max_len() + 1);
            assert_eq!(
                format.parse(&long),
                Err(TooLong {
                    length: format.max_len() + 1,
                    max: format.max_len()
                }),
                "{format}"
            );
        }
        for format in IdFormat::ALL {
            assert_eq!(
                format.parse("1 2"),
                Err(InvalidCharacter {
                    position: 1,
                    character: ' '
                }),
                "{format}"
            );
            assert_eq!(
                format.parse("12é"),
                Err(InvalidCharacter {
                    position: 2,
                    character: 'é'
                }),
                "{format}"
            );
        }
        // One past the largest value of each fixed-width form.
        assert_eq!(Id::parse_hex("ffffffffffffffff"), Ok(Id::MAX));
        assert_eq!(Id::parse_base32("FZZZZZZZZZZZZ"), Ok(Id::MAX));
        assert_eq!(Id::parse_base32("G000000000000"), Err(Overflow));
        assert_eq!(Id::parse_base62("LygHa16AHYF"), Ok(Id::MAX));
        assert_eq!(Id::parse_base62("LygHa16AHYG"), Err(Overflow));
        assert_eq!(Id::parse_base62("zzzzzzzzzzz"), Err(Overflow));
        // Multi-byte characters count as one each for the length check.
        assert_eq!(
            Id::parse_base62("éééééééééééé"),
            Err(TooLong {
                length: 12,
                max: 11
            })
        );
        // Each form's own refusals (multi-byte characters count as one).
        for (form, input, position, character) in [
            (IdFormat::Base62, "ééééé", 0, 'é'),
            (IdFormat::Hex, "0x10", 1, 'x'),
            (IdFormat::Base32, "0U", 1, 'U'),
            (IdFormat::Base32, "0-1", 1, '-'),
            (IdFormat::Base62, "_", 0, '_'),
            (IdFormat::Decimal, "ab", 0, 'a'),
        ] {
            assert_eq!(
                form.parse(input),
                Err(InvalidCharacter {
                    position,
                    character
                }),
                "{form:?} {input:?}"
            );
        }
    }

    #[test]
    fn base32_reads_case_and_misread_letters_as_crockford_says() {
        assert_eq!(Id::parse_base32("z"), Ok(Id::from_u64(31)));
        assert_eq!(Id::parse_base32("Z"), Ok(Id::from_u64(31)));
        for one in ["1", "i", "I", "l", "L"] {
            assert_eq!(Id::parse_base32(one), Ok(Id::from_u64(1)), "{one}");
        }
        for zero in ["0", "o", "O"] {
            assert_eq!(Id::parse_base32(zero), Ok(Id::MIN), "{zero}");
        }
        assert_eq!(Id::parse_hex("DeadBeef"), Ok(Id::from_u64(0xdead_beef)));
        // Base62 is case-sensitive: a and A are different digits.
        assert_ne!(Id::parse_base62("a"), Id::parse_base62("A"));
    }

    #[test]
    fn parsing_works_in_const_context() {
        const ID: Id = match Id::parse_base62("0Czks0tP37X") {
            Ok(id) => id,
            Err(_) => Id::MIN,
        };
        assert_eq!(ID.to_u64(), 175_928_847_299_117_063);
    }

    #[test]
    fn decimal_round_trips_at_the_edges() {
        for v in [
            0,
            1,
            9,
            10,
            99,
            100,
            i64::MAX as u64,
            u64::MAX - 1,
            u64::MAX,
        ] {
            let id = Id::from_u64(v);
            assert_eq!(id.to_string().parse::<Id>(), Ok(id));
            assert_eq!(id.to_string(), v.to_string());
        }
    }

    #[test]
    fn parse_rejects_what_is_not_a_plain_decimal() {
        assert_eq!("".parse::<Id>(), Err(ParseIdError::Empty));
        assert_eq!(
            " 1".parse::<Id>(),
            Err(ParseIdError::InvalidCharacter {
                position: 0,
                character: ' '
            })
        );
        assert_eq!(
            "1_000".parse::<Id>(),
            Err(ParseIdError::InvalidCharacter {
                position: 1,
                character: '_'
            })
        );
        assert_eq!(
            "12é".parse::<Id>(),
            Err(ParseIdError::InvalidCharacter {
                position: 2,
                character: 'é'
            })
        );
        assert_eq!(
            "-5".parse::<Id>(),
            Err(ParseIdError::InvalidCharacter {
                position: 0,
                character: '-'
            })
        );
        assert_eq!(
            "18446744073709551616".parse::<Id>(),
            Err(ParseIdError::Overflow)
        );
        assert_eq!(
            "99999999999999999999999".parse::<Id>(),
            Err(ParseIdError::Overflow)
        );
        // Leading zeros are still the same number.
        assert_eq!("007".parse::<Id>(), Ok(Id::from_u64(7)));
    }

    #[test]
    fn hex_and_ordering_follow_the_integer() {
        let a = Id::from_u64(0xdead_beef);
        assert_eq!(format!("{a:x}"), "deadbeef");
        assert_eq!(format!("{a:X}"), "DEADBEEF");
        assert_eq!(format!("{a:#018x}"), "0x00000000deadbeef");
        assert!(Id::from_u64(1) < Id::from_u64(2));
        assert_eq!(format!("{a:?}"), "Id(3735928559)");
    }
}
