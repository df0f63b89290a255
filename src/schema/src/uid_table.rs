//! `tsdb-uid` and `tsdb-meta` cells: forward (`name → id`) and reverse (`id → name`) maps,
//! the per-kind counters in row `0x00`, and the TSUID counter of `tsdb-meta`.

pub const ID_FAMILY: &[u8] = b"id";
pub const NAME_FAMILY: &[u8] = b"name";
/// Row holding the highest id handed out per kind (8-byte big-endian counters).
pub const MAXID_ROW: &[u8] = &[0];
/// `tsdb-meta` family and counter qualifier.
pub const META_FAMILY: &[u8] = b"name";
pub const TS_COUNTER_QUALIFIER: &[u8] = b"ts_ctr";
pub const TS_META_QUALIFIER: &[u8] = b"ts_meta";

/// The three kinds of names OpenTSDB assigns UIDs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UidKind {
    Metric,
    Tagk,
    Tagv,
}

impl UidKind {
    pub const ALL: [UidKind; 3] = [UidKind::Metric, UidKind::Tagk, UidKind::Tagv];

    /// The column qualifier of this kind (`metrics`, `tagk`, `tagv`).
    pub fn qualifier(self) -> &'static [u8] {
        match self {
            UidKind::Metric => b"metrics",
            UidKind::Tagk => b"tagk",
            UidKind::Tagv => b"tagv",
        }
    }

    /// The kind string OpenTSDB puts in messages (same as the qualifier).
    pub fn as_str(self) -> &'static str {
        std::str::from_utf8(self.qualifier()).expect("ascii")
    }

    /// The UIDMeta qualifier (`metric_meta`, …).
    pub fn meta_qualifier(self) -> &'static [u8] {
        match self {
            UidKind::Metric => b"metric_meta",
            UidKind::Tagk => b"tagk_meta",
            UidKind::Tagv => b"tagv_meta",
        }
    }

    /// Parses the names users type: `metric`/`metrics`, `tagk`, `tagv`.
    pub fn parse(s: &str) -> Option<UidKind> {
        match s.to_ascii_lowercase().as_str() {
            "metric" | "metrics" => Some(UidKind::Metric),
            "tagk" => Some(UidKind::Tagk),
            "tagv" => Some(UidKind::Tagv),
            _ => None,
        }
    }
}

/// The low `width` bytes of an id, big-endian; `None` when the id does not fit.
pub fn id_bytes(id: u64, width: usize) -> Option<Vec<u8>> {
    if width < 8 && id >> (8 * width) != 0 {
        return None;
    }
    Some(id.to_be_bytes()[8 - width..].to_vec())
}

pub fn id_from_bytes(b: &[u8]) -> u64 {
    b.iter().fold(0u64, |acc, &x| (acc << 8) | x as u64)
}

/// An 8-byte counter cell as stored by HBase's atomic increment.
pub fn decode_counter(v: &[u8]) -> Option<i64> {
    Some(i64::from_be_bytes(v.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uid_bytes_and_widths() {
        assert_eq!(id_bytes(6, 3), Some(vec![0, 0, 6]));
        assert_eq!(id_bytes(255, 1), Some(vec![255]));
        assert_eq!(id_bytes(256, 1), None);
        assert_eq!(id_bytes(16_777_215, 3), Some(vec![0xff; 3]));
        assert_eq!(id_bytes(16_777_216, 3), None);
        assert_eq!(id_from_bytes(&[0, 0, 0x2a]), 42);
        assert_eq!(UidKind::parse("METRIC"), Some(UidKind::Metric));
        assert_eq!(UidKind::Tagk.qualifier(), b"tagk");
        assert_eq!(decode_counter(&[0, 0, 0, 0, 0, 0, 0, 7]), Some(7));
    }
}
