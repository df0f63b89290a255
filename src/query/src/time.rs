//! OpenTSDB's time grammar for query start/end: `now`, `<n><unit>-ago`, integer seconds
//! (≤ 10 characters) or milliseconds, `<s>.<ms>`, and `yyyy/MM/dd[-HH:mm[:ss]]` (UTC).

/// A start or end time OpenTSDB would refuse, in its words.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TimeError {
    #[error("Invalid time: {0}")]
    Invalid(String),
    #[error("Invalid time: {0}. Negative timestamps are not supported.")]
    Negative(String),
    #[error("Invalid time: {0}. Millisecond timestamps must be in the format <seconds>.<ms> where the milliseconds are limited to 3 digits")]
    Millis(String),
}

fn unit_ms(u: &str) -> Option<u64> {
    Some(match u.to_ascii_lowercase().as_str() {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "w" => 7 * 86_400_000,
        "n" => 30 * 86_400_000,
        "y" => 365 * 86_400_000,
        _ => return None,
    })
}

pub fn parse_time(s: &str, now: u64) -> Result<u64, TimeError> {
    let bad = || TimeError::Invalid(s.to_string());
    let s = s.trim();
    if s.is_empty() {
        return Err(bad());
    }
    if s.eq_ignore_ascii_case("now") {
        return Ok(now);
    }
    if let Some(rel) = s.to_ascii_lowercase().strip_suffix("-ago") {
        let split = rel.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        let (n, unit) = rel.split_at(split);
        let n: u64 = n.parse().map_err(|_| bad())?;
        let ms = unit_ms(unit).ok_or_else(bad)?;
        return Ok(now.saturating_sub(n.saturating_mul(ms)));
    }
    if s.starts_with('-') {
        return Err(TimeError::Negative(s.to_string()));
    }
    if s.contains('/') || s.contains(':') {
        return parse_date(s).ok_or_else(bad);
    }
    if let Some(ms) = s.strip_suffix("ms") {
        return ms.parse().map_err(|_| bad());
    }
    if let Some((sec, frac)) = s.split_once('.') {
        if sec.len() == 10
            && (1..=3).contains(&frac.len())
            && frac.bytes().all(|b| b.is_ascii_digit())
        {
            // OpenTSDB removes the dot (so `.41` is read as 41 ms: its quirk).
            return format!("{sec}{frac}").parse().map_err(|_| bad());
        }
        return Err(TimeError::Millis(s.to_string()));
    }
    let n: u64 = s.parse().map_err(|_| bad())?;
    Ok(if s.len() <= 10 { n * 1000 } else { n })
}

/// `yyyy/MM/dd`, `yyyy/MM/dd HH:mm`, `yyyy/MM/dd-HH:mm`, `… HH:mm:ss`, in UTC.
fn parse_date(s: &str) -> Option<u64> {
    let (date, time) = match s.len() {
        10 => (s, None),
        // `get`: byte 10 may sit inside a multi-byte character.
        16 | 19 => (s.get(..10)?, Some(s.get(11..)?)),
        _ => return None,
    };
    let d: Vec<u32> = date
        .split('/')
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let [y, mo, da] = d[..] else { return None };
    let (h, mi, se) = match time {
        None => (0, 0, 0),
        Some(t) => {
            let p: Vec<u32> = t
                .split(':')
                .map(|x| x.parse().ok())
                .collect::<Option<_>>()?;
            match p[..] {
                [h, m] => (h, m, 0),
                [h, m, s] => (h, m, s),
                _ => return None,
            }
        }
    };
    if !(1..=12).contains(&mo) || !(1..=31).contains(&da) || h > 23 || mi > 59 || se > 59 {
        return None;
    }
    let days = days_from_civil(y as i64, mo, da);
    // Before 1970 is not a time OpenTSDB can store.
    u64::try_from((days * 86400 + (h * 3600 + mi * 60 + se) as i64) * 1000).ok()
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

#[cfg(test)]
mod tests {
    use super::*;

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
