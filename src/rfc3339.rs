//! RFC 3339 timestamps in UTC with millisecond precision, for decoded IDs.

use std::fmt;

/// Writes `unix_ms` as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub(crate) fn write(out: &mut impl fmt::Write, unix_ms: u64) -> fmt::Result {
    let days = unix_ms / 86_400_000;
    let in_day = unix_ms % 86_400_000;
    let (year, month, day) = civil_from_days(days);
    write!(
        out,
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000
    )
}

/// Appends `unix_ms` in RFC 3339 form to `s`.
#[cfg(test)]
pub(crate) fn push(s: &mut String, unix_ms: u64) {
    // Writing to a String cannot fail.
    let _ = write(s, unix_ms);
}

/// The proleptic Gregorian date of a day count since 1970-01-01
/// (Howard Hinnant's `civil_from_days`, for non-negative day counts).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(ms: u64) -> String {
        let mut s = String::new();
        push(&mut s, ms);
        s
    }

    #[test]
    fn formats_known_instants() {
        assert_eq!(fmt(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(fmt(1_462_015_105_796), "2016-04-30T11:18:25.796Z");
        assert_eq!(fmt(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(fmt(4_107_542_399_999), "2100-02-28T23:59:59.999Z");
        assert_eq!(fmt(4_107_542_400_000), "2100-03-01T00:00:00.000Z");
        assert_eq!(fmt(253_402_300_799_999), "9999-12-31T23:59:59.999Z");
    }

    #[test]
    fn agrees_with_a_day_by_day_walk() {
        let mut date = (1970u64, 1u64, 1u64);
        let years = if cfg!(miri) { 5 } else { 500 };
        for days in 0..(years * 366) {
            assert_eq!(civil_from_days(days), date, "day {days}");
            let (y, m, d) = date;
            let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
            let len = match m {
                2 if leap => 29,
                2 => 28,
                4 | 6 | 9 | 11 => 30,
                _ => 31,
            };
            date = if d < len {
                (y, m, d + 1)
            } else if m < 12 {
                (y, m + 1, 1)
            } else {
                (y + 1, 1, 1)
            };
        }
    }
}
