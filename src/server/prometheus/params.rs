//! Request parameters as Prometheus reads them (URL query and form body, Go's `FormValue`),
//! and its time and duration grammars.

use super::super::http::Request;

pub struct Params(Vec<(String, String)>);

impl Params {
    pub fn of(req: &Request) -> Params {
        let mut v = req.params();
        let form = req
            .headers
            .get("content-type")
            .and_then(|c| c.to_str().ok())
            .is_some_and(|c| {
                c.to_ascii_lowercase()
                    .starts_with("application/x-www-form-urlencoded")
            });
        if req.method == http::Method::POST && form {
            // Go's FormValue: body values come first.
            let mut body: Vec<(String, String)> =
                form_urlencoded::parse(&req.body).into_owned().collect();
            body.append(&mut v);
            v = body;
        }
        Params(v)
    }

    /// The first value (Go's `FormValue`).
    pub fn get(&self, k: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }

    pub fn all(&self, k: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

pub const MIN_TIME_MS: i64 = -9_223_309_901_257_974; // Prometheus' minTime in ms (math.MinInt64/2 + 1 s, as ms)
pub const MAX_TIME_MS: i64 = 9_223_309_901_257_974;

/// A time or duration parameter Prometheus would refuse, in its words (the caller names the
/// parameter: `invalid parameter "start": …`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParamError {
    #[error("cannot parse {0:?} to a valid timestamp")]
    Time(String),
    #[error("cannot parse {0:?} to a valid duration. It overflows int64")]
    DurationOverflow(String),
    #[error("cannot parse {0:?} to a valid duration")]
    Duration(String),
}

/// A time: float seconds (rounded to ms) or RFC 3339.
pub fn parse_time(s: &str) -> Result<i64, ParamError> {
    if let Ok(f) = s.parse::<f64>() {
        if f.is_finite() {
            let ms = (f * 1000.0).round();
            return Ok(ms.clamp(MIN_TIME_MS as f64, MAX_TIME_MS as f64) as i64);
        }
    }
    // Prometheus' own spellings of its min/max times.
    match s {
        "-292273086-05-16T16:47:06Z" => return Ok(MIN_TIME_MS),
        "292277025-08-18T07:12:54.999999999Z" => return Ok(MAX_TIME_MS),
        _ => {}
    }
    parse_rfc3339(s).ok_or_else(|| ParamError::Time(s.to_string()))
}

fn parse_rfc3339(s: &str) -> Option<i64> {
    // YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)
    let b = s.as_bytes();
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !(b[10] == b'T' || b[10] == b't')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d, h, mi, se) = (
        num(0..4)?,
        num(5..7)?,
        num(8..10)?,
        num(11..13)?,
        num(14..16)?,
        num(17..19)?,
    );
    let mut i = 19;
    let mut ms = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let frac = &s[start..i];
        let mut digits: String = frac.chars().take(3).collect();
        while digits.len() < 3 {
            digits.push('0');
        }
        ms = digits.parse().ok()?;
    }
    let off = match &s[i..] {
        "Z" | "z" => 0,
        tz if tz.len() == 6 && (tz.starts_with('+') || tz.starts_with('-')) => {
            let sign = if tz.starts_with('-') { -1 } else { 1 };
            // `get`: the six bytes may hold a multi-byte character.
            sign * (tz.get(1..3)?.parse::<i64>().ok()? * 3600
                + tz.get(4..6)?.parse::<i64>().ok()? * 60)
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    Some(((days * 86400 + h * 3600 + mi * 60 + se - off) * 1000) + ms)
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// A duration: float seconds, or a Prometheus duration (`1h30m`, `15s`, `100ms`), in ms.
pub fn parse_duration(s: &str) -> Result<i64, ParamError> {
    if let Ok(f) = s.parse::<f64>() {
        let ms = f * 1000.0;
        if !ms.is_finite() || ms > i64::MAX as f64 || ms < i64::MIN as f64 {
            return Err(ParamError::DurationOverflow(s.to_string()));
        }
        return Ok(ms.round() as i64);
    }
    parse_prom_duration(s).ok_or_else(|| ParamError::Duration(s.to_string()))
}

pub fn parse_prom_duration(s: &str) -> Option<i64> {
    if s.is_empty() {
        return None;
    }
    let mut total = 0i64;
    let mut rest = s;
    while !rest.is_empty() {
        let n = rest.bytes().take_while(|b| b.is_ascii_digit()).count();
        if n == 0 {
            return None;
        }
        let v: i64 = rest[..n].parse().ok()?;
        rest = &rest[n..];
        let (unit, len) = if rest.starts_with("ms") {
            (1, 2)
        } else {
            match rest.as_bytes().first()? {
                b's' => (1000, 1),
                b'm' => (60_000, 1),
                b'h' => (3_600_000, 1),
                b'd' => (86_400_000, 1),
                b'w' => (604_800_000, 1),
                b'y' => (31_536_000_000, 1),
                _ => return None,
            }
        };
        total = total.checked_add(v.checked_mul(unit)?)?;
        rest = &rest[len..];
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_durations() {
        assert_eq!(parse_time("4").unwrap(), 4000);
        assert_eq!(parse_time("1700000000.5").unwrap(), 1_700_000_000_500);
        assert_eq!(
            parse_time("2015-07-01T20:10:51.781Z").unwrap(),
            1_435_781_451_781
        );
        assert_eq!(
            parse_time("2015-07-01T22:10:51+02:00").unwrap(),
            1_435_781_451_000
        );
        assert!(parse_time("yesterday").is_err());
        assert_eq!(parse_duration("15").unwrap(), 15_000);
        assert_eq!(parse_duration("0.5").unwrap(), 500);
        assert_eq!(parse_duration("1h30m").unwrap(), 5_400_000);
        assert_eq!(parse_duration("100ms").unwrap(), 100);
        assert!(parse_duration("5x").is_err());
    }

    /// Fuzz finding (tests/fuzz, time_grammars): a zone offset holding a multi-byte character
    /// was sliced inside it.
    #[test]
    fn zone_offset_with_multibyte_character() {
        assert!(parse_time("2015-07-01T22:10:51+aé00").is_err());
        assert!(parse_time("2015-07-01T22:10:51+0é:0").is_err());
    }
}
