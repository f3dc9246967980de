//! The string forms of `Id` against an independent reference: any u64
//! round-trips through every form, fixed-width forms have their width and
//! sort as the numbers; any string parses exactly as a naive big-integer
//! reading says, or fails with the error that reading predicts (empty, too
//! long, first bad character and its position, overflow), and decimal
//! parsing agrees with `str::parse`.
#![no_main]

use flakeid::{Id, IdFormat, ParseIdError};
use libfuzzer_sys::fuzz_target;

/// The digits of each form as the reference sees them: the alphabet, and
/// whether parsing folds case.
fn digits(format: IdFormat) -> (&'static str, bool) {
    match format {
        IdFormat::Decimal => ("0123456789", false),
        IdFormat::Hex => ("0123456789abcdef", true),
        IdFormat::Base32 => ("0123456789ABCDEFGHJKMNPQRSTVWXYZ", true),
        IdFormat::Base62 => (
            "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
            false,
        ),
        _ => unreachable!("a form this target does not know"),
    }
}

fn digit(format: IdFormat, c: char) -> Option<u128> {
    let (alphabet, fold) = digits(format);
    let c = match (format, c) {
        // Crockford's readings of misread letters.
        (IdFormat::Base32, 'I' | 'i' | 'L' | 'l') => '1',
        (IdFormat::Base32, 'O' | 'o') => '0',
        (_, c) if fold && alphabet.contains(c.to_ascii_lowercase()) => c.to_ascii_lowercase(),
        (_, c) if fold => c.to_ascii_uppercase(),
        (_, c) => c,
    };
    alphabet.find(c).map(|i| i as u128)
}

/// What parsing `s` must give, by the definition in the docs.
fn reference(format: IdFormat, s: &str) -> Result<Id, ParseIdError> {
    if s.is_empty() {
        return Err(ParseIdError::Empty);
    }
    let length = s.chars().count();
    // Decimal takes any number of leading zeros, like `str::parse`.
    if format != IdFormat::Decimal && length > format.max_len() {
        return Err(ParseIdError::TooLong {
            length,
            max: format.max_len(),
        });
    }
    let radix = digits(format).0.len() as u128;
    let mut value: u128 = 0;
    for (position, character) in s.char_indices() {
        let Some(d) = digit(format, character) else {
            return Err(ParseIdError::InvalidCharacter {
                position,
                character,
            });
        };
        value = value * radix + d;
        if value > u128::from(u64::MAX) {
            return Err(ParseIdError::Overflow);
        }
    }
    Ok(Id::from_u64(value as u64))
}

fuzz_target!(|data: &[u8]| {
    let word = |at: usize| {
        let mut b = [0u8; 8];
        for (i, x) in data.iter().skip(at).take(8).enumerate() {
            b[i] = *x;
        }
        Id::from_u64(u64::from_le_bytes(b))
    };
    let (a, b) = (word(0), word(8));
    for format in IdFormat::ALL {
        let (ta, tb) = (format.encode(a), format.encode(b));
        assert_eq!(format.parse(&ta), Ok(a), "{format} {ta}");
        assert_eq!(format.parse(&tb), Ok(b), "{format} {tb}");
        assert!(ta.len() <= format.max_len());
        if let Some(width) = format.width() {
            assert_eq!(ta.len(), width, "{format} {ta}");
            assert_eq!(ta.cmp(&tb), a.cmp(&b), "{format}: {ta} vs {tb}");
        }
        // The formatted text is the reference's canonical spelling too.
        assert_eq!(reference(format, &ta), Ok(a));
    }
    if let Ok(s) = std::str::from_utf8(data) {
        for format in IdFormat::ALL {
            let parsed = format.parse(s);
            assert_eq!(parsed, reference(format, s), "{format} {s:?}");
            if format == IdFormat::Decimal {
                assert_eq!(parsed, s.parse::<Id>());
            }
            if let Ok(id) = parsed {
                assert_eq!(format.parse(&format.encode(id)), Ok(id));
            }
        }
    }
});
