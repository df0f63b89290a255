//! `tsdb` row keys: `[salt][metric uid][base hour][tagk uid tagv uid]…`.

use super::{java_bytes_hash, SchemaError};

/// Widths and salting, as OpenTSDB's `tsd.storage.uid.width.*` and `tsd.storage.salt.*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyLayout {
    pub metric_width: usize,
    pub tagk_width: usize,
    pub tagv_width: usize,
    pub salt_width: usize,
    pub salt_buckets: u32,
}

impl Default for KeyLayout {
    fn default() -> Self {
        KeyLayout {
            metric_width: 3,
            tagk_width: 3,
            tagv_width: 3,
            salt_width: 0,
            salt_buckets: 20,
        }
    }
}

pub const TIMESTAMP_BYTES: usize = 4;
/// Seconds in one row.
pub const ROW_SPAN: u64 = 3600;

/// Milliseconds iff any of the upper 32 bits are set (OpenTSDB's rule).
#[inline]
pub fn is_ms(ts: u64) -> bool {
    ts & 0xFFFF_FFFF_0000_0000 != 0
}

/// The timestamp in whole seconds.
#[inline]
pub fn seconds(ts: u64) -> u64 {
    if is_ms(ts) {
        ts / 1000
    } else {
        ts
    }
}

/// The timestamp in milliseconds.
#[inline]
pub fn millis(ts: u64) -> u64 {
    if is_ms(ts) {
        ts
    } else {
        ts * 1000
    }
}

/// The row's base time; OpenTSDB writes it as a Java int, so it wraps past 2^32.
#[inline]
pub fn base_time(ts: u64) -> u32 {
    let s = seconds(ts);
    (s - s % ROW_SPAN) as u32
}

/// The largest timestamp OpenTSDB accepts (ms).
pub const MAX_TIMESTAMP_MS: u64 = 9_999_999_999_999;

pub fn check_timestamp(ts: u64) -> Result<(), SchemaError> {
    if is_ms(ts) && ts > MAX_TIMESTAMP_MS {
        return Err(SchemaError::BadTimestamp(ts));
    }
    Ok(())
}

impl KeyLayout {
    pub fn tag_width(&self) -> usize {
        self.tagk_width + self.tagv_width
    }

    /// The salt of a TSUID (metric uid + tag pairs): |Arrays.hashCode % buckets|, big-endian.
    pub fn salt(&self, tsuid: &[u8]) -> Vec<u8> {
        let mut out = vec![0u8; self.salt_width];
        self.write_salt(tsuid, &mut out);
        out
    }

    fn write_salt(&self, tsuid: &[u8], out: &mut [u8]) {
        if self.salt_width == 0 || tsuid.iter().take(self.metric_width).all(|&b| b == 0) {
            return;
        }
        let h = java_bytes_hash(tsuid);
        let m = (h % self.salt_buckets as i32).unsigned_abs() as u64;
        let bytes = m.to_be_bytes();
        let n = out.len();
        for (i, o) in out.iter_mut().enumerate() {
            let src = 8 + i as isize - n as isize;
            *o = if src >= 0 { bytes[src as usize] } else { 0 };
        }
    }

    /// Builds the row key of a series (its TSUID) at the hour of `base`.
    pub fn row_key(&self, tsuid: &[u8], base: u32) -> Vec<u8> {
        let mut key = Vec::with_capacity(self.salt_width + tsuid.len() + TIMESTAMP_BYTES);
        key.resize(self.salt_width, 0);
        self.write_salt(tsuid, &mut key[..]);
        key.extend_from_slice(&tsuid[..self.metric_width]);
        key.extend_from_slice(&base.to_be_bytes());
        key.extend_from_slice(&tsuid[self.metric_width..]);
        key
    }

    /// The key prefix shared by every row of a metric from hour `base` on (unsalted layouts).
    pub fn metric_start(&self, salt: &[u8], metric: &[u8], base: u32) -> Vec<u8> {
        let mut k = salt.to_vec();
        k.extend_from_slice(metric);
        k.extend_from_slice(&base.to_be_bytes());
        k
    }

    /// Every salt prefix a scan has to visit.
    pub fn salt_prefixes(&self) -> Vec<Vec<u8>> {
        if self.salt_width == 0 {
            return vec![Vec::new()];
        }
        (0..self.salt_buckets as u64)
            .map(|b| b.to_be_bytes()[8 - self.salt_width..].to_vec())
            .collect()
    }

    /// Bytes before a row key's tag pairs: salt, metric UID, base time.
    pub fn head_width(&self) -> usize {
        self.salt_width + self.metric_width + TIMESTAMP_BYTES
    }

    pub fn parse<'a>(&self, key: &'a [u8]) -> Result<RowKey<'a>, SchemaError> {
        let head = self.head_width();
        let tw = self.tag_width();
        if key.len() <= head || !(key.len() - head).is_multiple_of(tw) {
            return Err(SchemaError::BadRowKey(super::hex_upper(key)));
        }
        let m = &key[self.salt_width..self.salt_width + self.metric_width];
        let ts = &key[self.salt_width + self.metric_width..head];
        Ok(RowKey {
            salt: &key[..self.salt_width],
            metric: m,
            base: u32::from_be_bytes([ts[0], ts[1], ts[2], ts[3]]),
            tags: &key[head..],
            layout: *self,
        })
    }
}

/// A decoded view of a `tsdb` row key.
#[derive(Debug, Clone, Copy)]
pub struct RowKey<'a> {
    pub salt: &'a [u8],
    pub metric: &'a [u8],
    pub base: u32,
    pub tags: &'a [u8],
    layout: KeyLayout,
}

impl<'a> RowKey<'a> {
    /// The TSUID: metric uid followed by the tag pairs.
    pub fn tsuid(&self) -> Vec<u8> {
        let mut t = Vec::with_capacity(self.metric.len() + self.tags.len());
        t.extend_from_slice(self.metric);
        t.extend_from_slice(self.tags);
        t
    }

    /// (tagk uid, tagv uid) pairs in key order.
    pub fn tag_pairs(&self) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
        let kw = self.layout.tagk_width;
        self.tags
            .chunks_exact(self.layout.tag_width())
            .map(move |c| c.split_at(kw))
    }
}

/// Sorts tag pairs (each `tagk uid || tagv uid`) the way OpenTSDB lays them out: by unsigned bytes.
pub fn sort_tag_pairs(pairs: &mut [Vec<u8>]) {
    pairs.sort_unstable();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_hex;

    fn h(s: &str) -> Vec<u8> {
        parse_hex(&s.replace(' ', "")).unwrap()
    }

    #[test]
    fn row_keys_from_opentsdb_tests() {
        let l = KeyLayout::default();
        let tsuid = h("000001 000001 000001");
        for (ts, key) in [
            (1356998400u64, "000001 50E22700 000001 000001"),
            (1356998400500, "000001 50E22700 000001 000001"),
            (1357001999, "000001 50E22700 000001 000001"),
            (1357002000, "000001 50E23510 000001 000001"),
            (1292148123, "000001 4D049D20 000001 000001"),
            (4294967295, "000001 FFFFF960 000001 000001"),
            (4294967296, "000001 00418890 000001 000001"),
            (9999999999999, "000001 540BD910 000001 000001"),
        ] {
            assert_eq!(l.row_key(&tsuid, base_time(ts)), h(key), "ts {ts}");
        }
    }

    #[test]
    fn salts_from_opentsdb_tests() {
        let l = KeyLayout {
            salt_width: 1,
            salt_buckets: 20,
            ..Default::default()
        };
        for (tsuid, salt) in [
            ("000001 000001 000001", 0x08u8),
            ("000001 000001 000001 000001 000001", 0x10),
            ("000001 000001 000001 000001 000001 000001 000001", 0x00),
            ("000001 000001 000002", 0x09),
            ("000001 000001 000001 000002 000003", 0x03),
            ("000002 000001 000001", 0x09),
            ("000003 000001 000001", 0x06),
            ("0B1420 000001 000001", 0x06),
            ("000001", 0x0C),
        ] {
            assert_eq!(l.salt(&h(tsuid)), vec![salt], "{tsuid}");
        }
        assert_eq!(java_bytes_hash(&h("000001000001000001")), 691019968);
        let two = KeyLayout {
            salt_width: 1,
            salt_buckets: 2,
            ..Default::default()
        };
        assert_eq!(two.salt(&h("000001000001000002")), vec![1]);
        let wide = KeyLayout {
            salt_width: 4,
            salt_buckets: 2,
            ..Default::default()
        };
        assert_eq!(wide.salt(&h("000001000001000002")), vec![0, 0, 0, 1]);
        assert_eq!(
            l.row_key(&h("000001000001000001"), 1356998400),
            h("08 000001 50E22700 000001 000001")
        );
    }

    #[test]
    fn parse_round_trips_and_rejects_truncated_keys() {
        let l = KeyLayout::default();
        let key = h("000001 50E22700 000001 000001 000002 000003");
        let rk = l.parse(&key).unwrap();
        assert_eq!(rk.base, 1356998400);
        assert_eq!(rk.tsuid(), h("000001 000001 000001 000002 000003"));
        assert_eq!(rk.tag_pairs().count(), 2);
        assert!(l.parse(&key[..12]).is_err());
        assert!(l.parse(&key[..7]).is_err());
    }

    #[test]
    fn timestamp_rules() {
        assert!(!is_ms(4294967295));
        assert!(is_ms(4294967296));
        assert_eq!(millis(1356998400), 1356998400000);
        assert!(check_timestamp(9999999999999).is_ok());
        assert!(check_timestamp(10000000000000).is_err());
    }
}
