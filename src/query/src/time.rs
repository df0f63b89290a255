//! OpenTSDB's time grammar for query start/end: `now`, `<n><unit>-ago`, integer seconds
//! (≤ 10 characters) or milliseconds, `<s>.<ms>`, and `yyyy/MM/dd[-HH:mm[:ss]]` (UTC unless
//! the query names a time zone).

/// A start or end time OpenTSDB would refuse, in its words.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TimeError {
    #[error("Invalid time: {0}")]
    Invalid(String),
    /// A number OpenTSDB's `Tags.parseLong` refuses, with its reason.
    #[error("Invalid time: {0}. {1}")]
    Number(String, String),
    #[error("Invalid time: {0}. Negative timestamps are not supported.")]
    Negative(String),
    #[error("Invalid time: {0}. Millisecond timestamps must be in the format <seconds>.<ms> where the milliseconds are limited to 3 digits")]
    Millis(String),
    /// A relative time's or a downsample interval's duration (OpenTSDB's `parseDuration`).
    #[error("{0}")]
    Duration(String),
    #[error("Invalid absolute date: {0}")]
    AbsoluteDate(String),
    #[error("Invalid date: {0}. Unparseable date: \"{0}\"")]
    Date(String),
    #[error("Invalid timezone name: {0}")]
    Timezone(String),
}

/// OpenTSDB's `DateTime.parseDuration`, in ms: leading digits (a positive long), and a unit
/// read from the last character only (`ms` when it is `s` after a lower-case `m`; `s`, `m`,
/// `h`, `d`, `w`, `n` = 30 d, `y` = 365 d, case-insensitive), so `1xh` is an hour as there.
pub fn parse_duration_ms(d: &str) -> Result<u64, TimeError> {
    let err = |what: &str| TimeError::Duration(format!("{what}{d}"));
    if d.is_empty() {
        return Err(TimeError::Duration(
            "Cannot parse null or empty duration".into(),
        ));
    }
    let digits = d.bytes().take_while(u8::is_ascii_digit).count();
    if digits == d.len() {
        return Err(err("Invalid duration, must have an integer and unit: "));
    }
    let n: i64 = d[..digits]
        .parse()
        .map_err(|_| err("Invalid duration (number): "))?;
    if n <= 0 {
        return Err(err("Zero or negative duration: "));
    }
    let last = d.chars().next_back().unwrap_or(' ').to_ascii_lowercase();
    let secs: i64 = match last {
        // `d.len() >= 2` here: a digit came first.
        's' if d.as_bytes()[d.len() - 2] == b'm' => return Ok(n as u64),
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        'w' => 7 * 86_400,
        'n' => 30 * 86_400,
        'y' => 365 * 86_400,
        _ => return Err(err("Invalid duration (suffix): ")),
    };
    n.checked_mul(secs * 1000)
        .map(|ms| ms as u64)
        .ok_or_else(|| err("Duration must be < Long.MAX_VALUE ms: "))
}

pub fn parse_time(s: &str, now: u64) -> Result<u64, TimeError> {
    parse_time_in(s, now, None)
}

/// [`parse_time`] with absolute dates read in the time zone `tz` (a name, e.g. from a query's
/// `timezone`; UTC without one).
pub fn parse_time_in(s: &str, now: u64, tz: Option<&str>) -> Result<u64, TimeError> {
    let bad = || TimeError::Invalid(s.to_string());
    let s = s.trim();
    if s.is_empty() {
        return Err(bad());
    }
    // OpenTSDB's `Tags.parseLong`, with its reason for a refusal.
    let long = |t: &str| {
        tsgate_opentsdb::value::parse_long(t)
            .map_err(|why| TimeError::Number(s.to_string(), why.to_string()))
    };
    if let Some(ms) = s.strip_suffix("ms") {
        if !ms.is_empty() && ms.bytes().all(|b| b.is_ascii_digit()) {
            return long(ms).map(|v| v as u64);
        }
    }
    if s.eq_ignore_ascii_case("now") {
        return Ok(now);
    }
    if s.len() >= 4
        && s.is_char_boundary(s.len() - 4)
        && s[s.len() - 4..].eq_ignore_ascii_case("-ago")
    {
        let ms = parse_duration_ms(&s[..s.len() - 4])?;
        return Ok(now.saturating_sub(ms));
    }
    if s.contains('/') || s.contains(':') {
        let zone: chrono_tz::Tz = match tz.filter(|z| !z.is_empty()) {
            Some(z) => z.parse().map_err(|_| TimeError::Timezone(z.to_string()))?,
            None => chrono_tz::UTC,
        };
        return parse_date(s, zone);
    }
    if s.contains('.') {
        let ok = s.split_once('.').is_some_and(|(sec, frac)| {
            sec.len() == 10
                && sec.bytes().all(|b| b.is_ascii_digit())
                && (1..=3).contains(&frac.len())
                && frac.bytes().all(|b| b.is_ascii_digit())
        });
        if !ok {
            return Err(TimeError::Millis(s.to_string()));
        }
        // OpenTSDB removes the dot (so `.41` is read as 41 ms: its quirk).
        return long(&s.replace('.', "")).map(|v| v as u64);
    }
    let n = long(s)?;
    if n < 0 {
        return Err(TimeError::Negative(s.to_string()));
    }
    let n = n as u64;
    Ok(if s.len() <= 10 { n * 1000 } else { n })
}

/// OpenTSDB's absolute dates, by length: `yyyy/MM/dd` (10), `yyyy/MM/dd-HH:mm` or
/// `yyyy/MM/dd HH:mm` (16), `… HH:mm:ss` (19), the dash form when the text holds a `-`.
/// Read like Java's lenient `SimpleDateFormat`: each field takes all its digits, values past
/// their range roll over (`2012/13/01` is 2013/01/01) and text after the last field is ignored.
fn parse_date(s: &str, tz: chrono_tz::Tz) -> Result<u64, TimeError> {
    let sep = if s.contains('-') { b'-' } else { b' ' };
    let fields: &[u8] = match s.len() {
        10 => b"//",
        16 => &[b'/', b'/', sep, b':'],
        19 => &[b'/', b'/', sep, b':', b':'],
        _ => return Err(TimeError::AbsoluteDate(s.to_string())),
    };
    let unparseable = || TimeError::Date(s.to_string());
    let b = s.as_bytes();
    let mut at = 0;
    let mut vals = [0i64; 6];
    for (i, v) in vals.iter_mut().enumerate().take(fields.len() + 1) {
        if i > 0 {
            if b.get(at) != Some(&fields[i - 1]) {
                return Err(unparseable());
            }
            at += 1;
        }
        let digits = b[at..].iter().take_while(|c| c.is_ascii_digit()).count();
        *v = s[at..at + digits].parse().map_err(|_| unparseable())?;
        at += digits;
    }
    let [y, mo, d, h, mi, se] = vals;
    let months = y
        .checked_mul(12)
        .and_then(|m| m.checked_add(mo - 1))
        .ok_or_else(unparseable)?;
    let first = chrono::NaiveDate::from_ymd_opt(
        i32::try_from(months.div_euclid(12)).map_err(|_| unparseable())?,
        months.rem_euclid(12) as u32 + 1,
        1,
    )
    .ok_or_else(unparseable)?;
    let secs = (d - 1) * 86_400 + h * 3600 + mi * 60 + se;
    let local = first
        .and_hms_opt(0, 0, 0)
        .and_then(|m| m.checked_add_signed(chrono::Duration::try_seconds(secs)?))
        .ok_or_else(unparseable)?;
    use chrono::TimeZone;
    let at_utc = match tz.from_local_datetime(&local) {
        chrono::LocalResult::Single(t) | chrono::LocalResult::Ambiguous(t, _) => t.timestamp(),
        // A local time in a DST gap: Java reads it with the offset before the gap.
        chrono::LocalResult::None => {
            let before = local - chrono::Duration::hours(1);
            tz.from_local_datetime(&before)
                .earliest()
                .ok_or_else(unparseable)?
                .timestamp()
                + 3600
        }
    };
    // Before 1970 is not a time OpenTSDB can store.
    u64::try_from(at_utc)
        .ok()
        .and_then(|t| t.checked_mul(1000))
        .ok_or_else(unparseable)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// TestDateTime / TestTSQuery / Tags.parseLong: the reason OpenTSDB appends.
    #[test]
    fn numbers_are_refused_with_parse_longs_reason() {
        for (t, why) in [
            (
                "Not a timestamp at all",
                "Value too long: Not a timestamp at all",
            ),
            (
                "1355961603587168438418",
                "Value too long: 1355961603587168438418",
            ),
            ("1s", "Invalid character 's' in 1s"),
            ("+", "Just a sign, no value: +"),
            ("42a51", "Invalid character 'a' in 42a51"),
            ("9223372036854775808", "Overflow in 9223372036854775808"),
            (
                "18446744073709551616",
                "Value too long: 18446744073709551616",
            ),
        ] {
            assert_eq!(
                parse_time(t, 0).unwrap_err().to_string(),
                format!("Invalid time: {t}. {why}")
            );
        }
        assert_eq!(parse_time("-0", 0), Ok(0));
        assert_eq!(
            parse_time("-5", 0).unwrap_err().to_string(),
            "Invalid time: -5. Negative timestamps are not supported."
        );
        // Eleven characters: milliseconds, as OpenTSDB judges by length.
        assert_eq!(parse_time("+1356998400", 0), Ok(1_356_998_400));
    }

    #[test]
    fn grammar() {
        let now = 1_700_000_000_000;
        assert_eq!(parse_time("1356998400", now), Ok(1356998400000));
        assert_eq!(parse_time("1356998400500", now), Ok(1356998400500));
        assert_eq!(parse_time("1h-ago", now), Ok(now - 3_600_000));
        assert_eq!(parse_time("now", now), Ok(now));
        assert_eq!(parse_time("2013/01/01-00:00:00", now), Ok(1356998400000));
        assert_eq!(parse_time("2013/01/01", now), Ok(1356998400000));
        assert_eq!(parse_time("1355961603.41", now), Ok(135596160341));
        assert!(parse_time("1355961603.4123", now).is_err());
        assert!(parse_time("-5", now)
            .unwrap_err()
            .to_string()
            .contains("Negative"));
        assert!(parse_time("soon", now).is_err());
    }

    /// OpenTSDB's TestDateTime (utils), now = 1357300800000 as there.
    #[test]
    fn opentsdb_test_date_time_vectors() {
        let now = 1357300800000u64;
        let ago = |s: &str| now - parse_time(s, now).unwrap();
        // parseDateTimeStringRelative{S,M,H,D,D30,W,N,Y}
        assert_eq!(ago("60s-ago"), 60_000);
        assert_eq!(ago("1m-ago"), 60_000);
        assert_eq!(ago("2h-ago"), 7_200_000);
        assert_eq!(ago("2d-ago"), 2 * 86_400_000);
        assert_eq!(ago("30d-ago"), 30 * 86_400_000);
        assert_eq!(ago("3w-ago"), 21 * 86_400_000);
        assert_eq!(ago("2n-ago"), 60 * 86_400_000);
        assert_eq!(ago("2y-ago"), 730 * 86_400_000);
        assert_eq!(ago("1H-AGO"), 3_600_000, "isRelativeDateCase");
        let ok = |s: &str, want: u64| assert_eq!(parse_time(s, now), Ok(want), "{s}");
        ok("1355961600", 1355961600000);
        ok("0", 0);
        ok("13559616000", 13559616000);
        ok("1355961603418", 1355961603418);
        ok("123123ms", 123123);
        ok("1234567890123ms", 1234567890123);
        ok("1355961603.418", 1355961603418);
        ok("1355961603.41", 135596160341);
        ok("1355961603.4", 13559616034);
        // parseDateTimeStringDate* with tz "GMT"
        let gmt = |s: &str| parse_time_in(s, now, Some("GMT"));
        assert_eq!(gmt("2012/12/20"), Ok(1355961600000));
        assert_eq!(gmt("2012/12/20 12:42"), Ok(1356007320000));
        assert_eq!(gmt("2012/12/20-12:42"), Ok(1356007320000));
        assert_eq!(gmt("2012/12/20 12:42:42"), Ok(1356007362000));
        assert_eq!(gmt("2012/12/20-12:42:42"), Ok(1356007362000));
        for bad in [
            "-135596160",
            "1234567890.2.4",
            "1234.56789.123",
            "1234.56789.0.3",
            "135596160.418",
            "1355961603.4180",
            "1355961603587168438418",
            "2012/12/",
            "1s",
            "Not a timestamp at all",
        ] {
            assert!(parse_time(bad, now).is_err(), "{bad}");
        }
        assert_eq!(
            parse_time("-135596160", now),
            Err(TimeError::Negative("-135596160".into()))
        );
        // parseDuration*: the unit is the last character; zero, negative, no unit, bad unit.
        assert_eq!(parse_duration_ms("60ms"), Ok(60));
        assert_eq!(parse_duration_ms("60S"), Ok(60_000));
        assert_eq!(parse_duration_ms("1n"), Ok(30 * 86_400_000));
        assert_eq!(parse_duration_ms("4294967296ms"), Ok(1 << 32));
        for bad in [
            "4611686018427387904y",
            "-60s",
            "foo60s",
            "60p",
            "6393590450230209347573980s",
        ] {
            assert!(parse_duration_ms(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_time("0h-ago", now).unwrap_err().to_string(),
            "Zero or negative duration: 0h"
        );
        assert_eq!(
            parse_time("5x-ago", now).unwrap_err().to_string(),
            "Invalid duration (suffix): 5x"
        );
        assert_eq!(
            parse_time("2012/12/2", now).unwrap_err().to_string(),
            "Invalid absolute date: 2012/12/2"
        );
    }

    /// Java's lenient `SimpleDateFormat` rolls fields over; a named zone moves the date.
    #[test]
    fn absolute_dates_roll_over_and_take_the_time_zone() {
        assert_eq!(parse_time("2012/13/01", 0), parse_time("2013/01/01", 0));
        assert_eq!(parse_time("2013/03/00", 0), parse_time("2013/02/28", 0));
        assert_eq!(
            parse_time_in("2013/01/01-00:00", 0, Some("America/New_York")),
            Ok(1357016400000)
        );
        assert_eq!(
            parse_time_in("2013/01/01", 0, Some("Nowhere/Special")),
            Err(TimeError::Timezone("Nowhere/Special".into()))
        );
        // A zone matters to absolute dates only.
        assert_eq!(
            parse_time_in("1h-ago", 7_200_000, Some("Nowhere")),
            Ok(3_600_000)
        );
    }

    /// Fuzz finding (tests/fuzz, time_grammars and opentsdb_query_string): a 16- or 19-byte
    /// date with a multi-byte character across byte 10 was sliced inside it.
    #[test]
    fn dates_with_multibyte_characters_are_errors() {
        assert!(parse_time("_0:22d1/0о:103", 0).is_err());
        assert!(parse_time("2013/01/0é12:00", 0).is_err());
        assert!(parse_time("0000/01/01", 0).is_err());
        assert_eq!(parse_time("2013/01/01-00:00", 0).unwrap(), 1356998400000);
    }
}
