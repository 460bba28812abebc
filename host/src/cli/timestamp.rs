//! The timestamp tracing's `SystemTime` writes (RFC 3339 in UTC, with
//! microseconds), with its date and time of day worked out once a second.
//!
//! tracing's formatter converts the clock to a calendar date for every
//! line, through `core::fmt`: a fifth of the decision line's cost at a
//! cache hit (docs/performance.md). Each thread keeps the text of the
//! current second and adds only the microseconds.

use std::cell::Cell;
use std::time::{SystemTime, UNIX_EPOCH};

/// `YYYY-MM-DDTHH:MM:SS.`
const SECOND_LEN: usize = 20;

thread_local! {
    /// The second last written, and its text.
    static SECOND: Cell<(u64, [u8; SECOND_LEN])> = const { Cell::new((u64::MAX, [0; SECOND_LEN])) };
}

/// Appends the current time as tracing writes it; false (nothing written)
/// for a clock outside the years 1970 to 9999, which tracing writes its
/// own way.
pub(super) fn now(line: &mut String) -> bool {
    let Ok(since) = SystemTime::now().duration_since(UNIX_EPOCH) else {
        return false;
    };
    at(line, since.as_secs(), since.subsec_micros())
}

fn at(line: &mut String, secs: u64, micros: u32) -> bool {
    let (cached, mut text) = SECOND.get();
    if cached != secs {
        let Some(fresh) = second_text(secs) else {
            return false;
        };
        text = fresh;
        SECOND.set((secs, text));
    }
    // ASCII digits and separators only.
    line.push_str(std::str::from_utf8(&text).unwrap_or_default());
    push_digits(line, micros, 6);
    line.push('Z');
    true
}

/// `YYYY-MM-DDTHH:MM:SS.` for `secs` since the epoch, up to year 9999.
fn second_text(secs: u64) -> Option<[u8; SECOND_LEN]> {
    let (year, month, day) = civil(i64::try_from(secs / 86_400).ok()?);
    if year > 9999 {
        return None;
    }
    let of_day = secs % 86_400;
    let mut text = String::with_capacity(SECOND_LEN);
    push_digits(&mut text, year as u32, 4);
    text.push('-');
    push_digits(&mut text, month, 2);
    text.push('-');
    push_digits(&mut text, day, 2);
    text.push('T');
    push_digits(&mut text, (of_day / 3600) as u32, 2);
    text.push(':');
    push_digits(&mut text, (of_day / 60 % 60) as u32, 2);
    text.push(':');
    push_digits(&mut text, (of_day % 60) as u32, 2);
    text.push('.');
    text.into_bytes().try_into().ok()
}

/// `n`'s last `width` decimal digits, zero-padded.
fn push_digits(line: &mut String, n: u32, width: u32) {
    for place in (0..width).rev() {
        let digit = n / 10u32.pow(place) % 10;
        line.push(char::from(b'0' + digit as u8));
    }
}

/// The proleptic Gregorian date of a day counted from 1970-01-01 (the
/// days-to-civil algorithm: eras of 400 years, years starting in March).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::fmt::format::Writer;
    use tracing_subscriber::fmt::time::FormatTime;

    fn written(secs: u64, micros: u32) -> String {
        let mut line = String::new();
        assert!(at(&mut line, secs, micros), "{secs}");
        line
    }

    /// The `time` crate's reading of the same instant.
    fn expected(secs: u64, micros: u32) -> String {
        let t = time::OffsetDateTime::from_unix_timestamp(secs as i64).expect("in range");
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{micros:06}Z",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        )
    }

    #[test]
    fn dates_match_the_calendar() {
        let mut secs = 0u64;
        // Every ~3.7 days from 1970 to 9999, plus the edges of leap days,
        // centuries and the last second written.
        while secs < 253_402_300_800 {
            assert_eq!(written(secs, 0), expected(secs, 0));
            secs += 317_123;
        }
        for secs in [
            951_782_399,     // 2000-02-28T23:59:59
            951_868_799,     // 2000-02-29T23:59:59
            4_107_542_399,   // 2100-02-28T23:59:59
            4_107_542_400,   // 2100-03-01T00:00:00
            253_402_300_799, // 9999-12-31T23:59:59
        ] {
            assert_eq!(written(secs, 999_999), expected(secs, 999_999));
        }
        assert_eq!(written(0, 7), "1970-01-01T00:00:00.000007Z");
    }

    #[test]
    fn a_second_is_reused_only_for_itself() {
        assert_eq!(written(86_399, 1), "1970-01-01T23:59:59.000001Z");
        assert_eq!(written(86_399, 2), "1970-01-01T23:59:59.000002Z");
        assert_eq!(written(86_400, 3), "1970-01-02T00:00:00.000003Z");
    }

    #[test]
    fn years_past_9999_are_left_to_tracing() {
        let mut line = String::new();
        assert!(!at(&mut line, 253_402_300_800, 0));
        assert!(line.is_empty());
    }

    #[test]
    fn the_clock_reads_as_tracing_reads_it() {
        // Both read the clock; a second may tick between the two reads.
        let matched = (0..5).any(|_| {
            let mut theirs = String::new();
            let mut ours = String::new();
            let _ = tracing_subscriber::fmt::time::SystemTime
                .format_time(&mut Writer::new(&mut theirs));
            assert!(now(&mut ours));
            assert_eq!(ours.len(), theirs.len(), "{ours} {theirs}");
            ours[..19] == theirs[..19]
        });
        assert!(matched);
    }
}
