//! graphite-web's time grammar (`render/attime.py`, spec §2.3.1), in UTC (graphite-web's default
//! `TIME_ZONE`) or in a request's `tz` zone ([`parse_attime_in`]: dates, times of day and "today"
//! are that zone's wall clock). Also the `number unit` offsets used inside function arguments
//! (`'5min'`, `'-1d'`).

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, Offset, TimeZone, Utc};

/// A time or offset graphite-web would refuse, in its words.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TimeError {
    /// An offset unit none of graphite's prefixes name (a bare `m`, say).
    #[error("Invalid offset unit '{0}'")]
    Unit(String),
    #[error("Invalid offset '{0}'")]
    Offset(String),
    /// An at-time (or its reference part) that is no date, time or epoch.
    #[error("Invalid time '{0}'")]
    Time(String),
}

/// An offset unit as graphite-web's `getUnitString` names it, by the string's start: `s…`,
/// `min…`, `h…`, `d…`, `w…`, `mon…`, `y…` (a bare `m` names none, which is why Grafana sends
/// `min`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimeUnit {
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Year,
}

/// The unit `u` names, or graphite's refusal.
pub fn time_unit(u: &str) -> Result<TimeUnit, TimeError> {
    Ok(if u.starts_with('s') {
        TimeUnit::Second
    } else if u.starts_with("min") {
        TimeUnit::Minute
    } else if u.starts_with('h') {
        TimeUnit::Hour
    } else if u.starts_with('d') {
        TimeUnit::Day
    } else if u.starts_with('w') {
        TimeUnit::Week
    } else if u.starts_with("mon") {
        TimeUnit::Month
    } else if u.starts_with('y') {
        TimeUnit::Year
    } else {
        return Err(TimeError::Unit(u.to_string()));
    })
}

/// Seconds of one offset unit (a month is 30 days, a year 365).
fn unit_seconds(u: &str) -> Result<i64, TimeError> {
    Ok(match time_unit(u)? {
        TimeUnit::Second => 1,
        TimeUnit::Minute => 60,
        TimeUnit::Hour => 3600,
        TimeUnit::Day => 86400,
        TimeUnit::Week => 7 * 86400,
        TimeUnit::Month => 30 * 86400,
        TimeUnit::Year => 365 * 86400,
    })
}

/// `[+-]` then one or more `number unit`; unsigned means positive. Returns seconds.
pub fn parse_offset(s: &str) -> Result<i64, TimeError> {
    let t: String = s
        .trim()
        .to_ascii_lowercase()
        .chars()
        .filter(|c| !matches!(c, ' ' | '_' | ','))
        .collect();
    let (sign, mut rest) = match t.as_bytes().first() {
        Some(b'-') => (-1, &t[1..]),
        Some(b'+') => (1, &t[1..]),
        _ => (1, &t[..]),
    };
    if rest.is_empty() {
        return Err(TimeError::Offset(s.to_string()));
    }
    let mut total = 0i64;
    while !rest.is_empty() {
        let d = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if d == 0 {
            return Err(TimeError::Offset(s.to_string()));
        }
        let n: i64 = rest[..d]
            .parse()
            .map_err(|_| TimeError::Offset(s.to_string()))?;
        rest = &rest[d..];
        let u = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        // Only one sign per offset: `-1h-30min` is an error, as in graphite.
        if u == 0 || rest[u..].starts_with(|c: char| !c.is_ascii_digit()) {
            return Err(TimeError::Offset(s.to_string()));
        }
        // Checked: a huge count is an invalid offset, not a wrapped one.
        total = n
            .checked_mul(unit_seconds(&rest[..u])?)
            .and_then(|x| total.checked_add(x))
            .ok_or_else(|| TimeError::Offset(s.to_string()))?;
        rest = &rest[u..];
    }
    Ok(sign * total)
}

/// An at-time (`from`, `until`) in epoch seconds, relative to `now`, in UTC.
pub fn parse_attime(s: &str, now: i64) -> Result<i64, TimeError> {
    parse_attime_in(s, now, chrono_tz::UTC)
}

/// An at-time read on the wall clock of `tz` (graphite-web's `tz` parameter).
pub fn parse_attime_in(s: &str, now: i64, tz: chrono_tz::Tz) -> Result<i64, TimeError> {
    let t: String = s
        .trim()
        .to_ascii_lowercase()
        .chars()
        .filter(|c| !matches!(c, ' ' | '_' | ','))
        .collect();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        // An 8-digit YYYYMMDD with a valid month and day is a date, not an epoch.
        if t.len() == 8
            && (1..=12).contains(&t[4..6].parse::<u32>().unwrap_or(0))
            && (1..=31).contains(&t[6..8].parse::<u32>().unwrap_or(0))
        {
            return parse_ref(&t, now, tz);
        }
        return t.parse().map_err(|_| TimeError::Time(s.to_string()));
    }
    // Only the first sign splits the reference from the offset.
    let (r, off) = match t.find(['+', '-']) {
        Some(i) => (&t[..i], Some(&t[i..])),
        None => (&t[..], None),
    };
    let base = parse_ref(r, now, tz)?;
    match off {
        Some(o) => base
            .checked_add(parse_offset(o)?)
            .ok_or_else(|| TimeError::Time(s.to_string())),
        None => Ok(base),
    }
}

fn parse_ref(r: &str, now: i64, tz: chrono_tz::Tz) -> Result<i64, TimeError> {
    let bad = || TimeError::Time(r.to_string());
    let now_dt = Utc
        .timestamp_opt(now, 0)
        .single()
        .ok_or_else(bad)?
        .with_timezone(&tz)
        .naive_local();
    if r.is_empty() || r == "now" {
        return Ok(now);
    }
    let mut rest = r;
    // Time of day first.
    let mut tod: Option<NaiveTime> = None;
    for (word, h) in [("midnight", 0), ("noon", 12), ("teatime", 16)] {
        if let Some(x) = rest.strip_prefix(word) {
            tod = NaiveTime::from_hms_opt(h, 0, 0);
            rest = x;
        }
    }
    if tod.is_none() {
        if let Some(colon) = rest.find(':') {
            let h: u32 = rest[..colon].parse().map_err(|_| bad())?;
            let m: u32 = rest
                .get(colon + 1..colon + 3)
                .and_then(|x| x.parse().ok())
                .ok_or_else(bad)?;
            rest = &rest[colon + 3..];
            let mut h = h;
            if let Some(x) = rest.strip_prefix("am") {
                h %= 12;
                rest = x;
            } else if let Some(x) = rest.strip_prefix("pm") {
                h = h % 12 + 12;
                rest = x;
            }
            tod = Some(NaiveTime::from_hms_opt(h, m, 0).ok_or_else(bad)?);
        } else if let Some(ap) = rest
            .find("am")
            .or_else(|| rest.find("pm"))
            .filter(|&i| i > 0 && i <= 2 && rest[..i].bytes().all(|b| b.is_ascii_digit()))
        {
            let h: u32 = rest[..ap].parse().map_err(|_| bad())?;
            let h = if &rest[ap..ap + 2] == "pm" {
                h % 12 + 12
            } else {
                h % 12
            };
            tod = Some(NaiveTime::from_hms_opt(h, 0, 0).ok_or_else(bad)?);
            rest = &rest[ap + 2..];
        }
    }
    let today = now_dt.date();
    let date: NaiveDate = match rest {
        "" => today,
        "today" => today,
        // Checked: a `now` at the end of the calendar has no tomorrow.
        "yesterday" => today
            .checked_sub_signed(Duration::days(1))
            .ok_or_else(bad)?,
        "tomorrow" => today
            .checked_add_signed(Duration::days(1))
            .ok_or_else(bad)?,
        d if d.len() == 8 && d.bytes().all(|b| b.is_ascii_digit()) => {
            NaiveDate::parse_from_str(d, "%Y%m%d").map_err(|_| bad())?
        }
        d if d.contains('/') => {
            let parts: Vec<&str> = d.split('/').collect();
            if parts.len() != 3 {
                return Err(bad());
            }
            let (m, dd): (u32, u32) = (
                parts[0].parse().map_err(|_| bad())?,
                parts[1].parse().map_err(|_| bad())?,
            );
            // graphite-web's century rule: below 1900 add 1900, then below 1970 add 100
            // (`11/20/69` is 2069, `11/20/70` 1970, `11/20/1950` 2050).
            let mut y: i32 = parts[2].parse().map_err(|_| bad())?;
            if y < 1900 {
                y += 1900;
            }
            if y < 1970 {
                y += 100;
            }
            NaiveDate::from_ymd_opt(y, m, dd).ok_or_else(bad)?
        }
        d => {
            const MONTHS: [&str; 12] = [
                "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
            ];
            const DAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
            if let Some(m) = MONTHS.iter().position(|m| d.starts_with(m)) {
                let digits: String = d.chars().filter(|c| c.is_ascii_digit()).collect();
                let day: u32 = digits.parse().map_err(|_| bad())?;
                NaiveDate::from_ymd_opt(today.year(), m as u32 + 1, day).ok_or_else(bad)?
            } else if let Some(w) = DAYS.iter().position(|w| d.starts_with(w)) {
                // The most recent such day; today counts.
                let back = (today.weekday().num_days_from_monday() as i64 - w as i64).rem_euclid(7);
                today
                    .checked_sub_signed(Duration::days(back))
                    .ok_or_else(bad)?
            } else {
                return Err(bad());
            }
        }
    };
    let time = tod.unwrap_or_else(|| {
        if rest.is_empty() {
            now_dt.time()
        } else {
            NaiveTime::MIN
        }
    });
    Ok(localize(tz, NaiveDateTime::new(date, time)))
}

/// A wall-clock time of `tz` as epoch seconds, as pytz's `localize` (`is_dst=False`) reads it:
/// a time a clock change repeats is its later, standard-time instant; one it skips is read
/// with the offset in force before the change.
fn localize(tz: chrono_tz::Tz, t: NaiveDateTime) -> i64 {
    use chrono::offset::LocalResult;
    match tz.from_local_datetime(&t) {
        LocalResult::Single(d) => d.timestamp(),
        LocalResult::Ambiguous(_, later) => later.timestamp(),
        LocalResult::None => {
            let before = t - Duration::hours(3);
            let off = tz
                .from_local_datetime(&before)
                .earliest()
                .map(|d| d.offset().fix().local_minus_utc())
                .unwrap_or(0);
            t.and_utc().timestamp() - off as i64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The spec's table, tested against graphite-web 1.1.8 with now = 2026-11-21 14:30:45 UTC.
    const NOW: i64 = 1795271445;

    fn at(s: &str) -> String {
        let t = parse_attime(s, NOW).unwrap();
        Utc.timestamp_opt(t, 0)
            .unwrap()
            .format("%Y-%m-%d %H:%M:%S")
            .to_string()
    }

    #[test]
    fn spec_table() {
        assert_eq!(at("now"), "2026-11-21 14:30:45");
        assert_eq!(at("-0h"), "2026-11-21 14:30:45");
        assert_eq!(at("-1h"), "2026-11-21 13:30:45");
        assert_eq!(at("now-1h"), "2026-11-21 13:30:45");
        assert_eq!(at("-2hours"), "2026-11-21 12:30:45");
        assert_eq!(at("-90s"), "2026-11-21 14:29:15");
        assert_eq!(at("-1h30min"), "2026-11-21 13:00:45");
        assert_eq!(at("-5min"), "2026-11-21 14:25:45");
        assert_eq!(at("-1mon"), "2026-10-22 14:30:45");
        assert_eq!(at("-1w"), "2026-11-14 14:30:45");
        assert_eq!(at("+1h"), "2026-11-21 15:30:45");
        assert_eq!(parse_attime("1795262400", NOW).unwrap(), 1795262400);
        assert_eq!(at("20261120"), "2026-11-20 00:00:00");
        assert_eq!(at("12:00_20261120"), "2026-11-20 12:00:00");
        assert_eq!(at("9:05_20261120"), "2026-11-20 09:05:00");
        assert_eq!(at("midnight"), "2026-11-21 00:00:00");
        assert_eq!(at("teatime"), "2026-11-21 16:00:00");
        assert_eq!(at("noon yesterday"), "2026-11-20 12:00:00");
        assert_eq!(at("6pm today"), "2026-11-21 18:00:00");
        assert_eq!(at("yesterday"), "2026-11-20 00:00:00");
        assert_eq!(at("monday"), "2026-11-16 00:00:00");
        assert_eq!(at("january 1"), "2026-01-01 00:00:00");
        assert_eq!(at("11/20/26"), "2026-11-20 00:00:00");
        assert_eq!(at("11/20/2026"), "2026-11-20 00:00:00");
        for bad in ["-5m", "now-1h+30min", "1795262400.5", "-1.5h", "abc"] {
            assert!(parse_attime(bad, NOW).is_err(), "{bad}");
        }
    }

    #[test]
    fn offsets() {
        assert_eq!(parse_offset("5min").unwrap(), 300);
        assert_eq!(parse_offset("-1d").unwrap(), -86400);
        assert_eq!(parse_offset("1h30min").unwrap(), 5400);
        assert!(parse_offset("5m").is_err());
    }

    /// graphite-web 1.1.8 reads `MM/DD/YY` years below 1900 as 19YY, then those below 1970
    /// 100 years later.
    #[test]
    fn slash_dates_use_graphites_century_rule() {
        assert_eq!(at("11/20/26"), "2026-11-20 00:00:00");
        assert_eq!(at("11/20/69"), "2069-11-20 00:00:00");
        assert_eq!(at("11/20/70"), "1970-11-20 00:00:00");
        assert_eq!(at("11/20/1950"), "2050-11-20 00:00:00");
        assert_eq!(at("11/20/2026"), "2026-11-20 00:00:00");
    }

    /// With a `tz` zone, dates, times of day and "today" are that zone's wall clock; epochs
    /// and offsets from now are absolute (graphite-web's `tzinfo.localize`).
    #[test]
    fn zone_wall_clock() {
        let berlin: chrono_tz::Tz = "Europe/Berlin".parse().unwrap();
        let in_tz = |s: &str, tz| {
            Utc.timestamp_opt(parse_attime_in(s, NOW, tz).unwrap(), 0)
                .unwrap()
                .format("%Y-%m-%d %H:%M:%S")
                .to_string()
        };
        // 2026-11-20 is CET (UTC+1).
        assert_eq!(in_tz("12:00_20261120", berlin), "2026-11-20 11:00:00");
        assert_eq!(in_tz("20261120", berlin), "2026-11-19 23:00:00");
        // NOW is 14:30:45 UTC, 15:30:45 in Berlin: midnight is Berlin's.
        assert_eq!(in_tz("midnight", berlin), "2026-11-20 23:00:00");
        assert_eq!(in_tz("-1h", berlin), "2026-11-21 13:30:45");
        assert_eq!(
            parse_attime_in("1795262400", NOW, berlin).unwrap(),
            1795262400
        );
        let ny: chrono_tz::Tz = "America/New_York".parse().unwrap();
        assert_eq!(in_tz("09:30_20260701", ny), "2026-07-01 13:30:00");
        // 01:30 on 2026-11-01 happens twice in New York: pytz's is_dst=False takes the
        // standard-time one (UTC-5).
        assert_eq!(in_tz("01:30_20261101", ny), "2026-11-01 06:30:00");
    }

    /// Fuzz findings (tests/fuzz, time_grammars): offsets and dates past i64 or the calendar
    /// overflowed (a panic with overflow checks, a wrapped time without).
    #[test]
    fn out_of_range_is_an_error() {
        assert!(parse_offset("-99999999999999999y").is_err());
        assert!(parse_offset("9223372036854775807s1s").is_err());
        assert!(parse_attime("now+9223372036854775807s", NOW).is_err());
        let last_day = NaiveDate::MAX
            .and_hms_opt(12, 0, 0)
            .unwrap()
            .and_utc()
            .timestamp();
        assert!(parse_attime("tomorrow", last_day).is_err());
        let first_day = NaiveDate::MIN
            .and_hms_opt(12, 0, 0)
            .unwrap()
            .and_utc()
            .timestamp();
        assert!(parse_attime("yesterday", first_day).is_err());
    }
}
