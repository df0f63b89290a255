//! OpenTSDB 2.4's HBase schema, byte for byte: row keys, qualifiers, values,
//! compacted columns and the UID table. Pure functions, no I/O.

pub mod annotation;
pub mod column;
pub mod compaction;
#[cfg(test)]
mod props;
pub mod rollup;
pub mod rowkey;
pub mod uid_table;

pub use column::{DataValue, RawPoint};

/// The column family of `tsdb` (points and annotations), `tsdb-tree` (branches and leaves) and
/// the rollup tables: OpenTSDB names each of them `t`.
pub const DATA_FAMILY: &[u8] = b"t";
pub use rowkey::{KeyLayout, RowKey};

/// Why a stored cell or key could not be decoded.
#[derive(Debug, thiserror::Error, PartialEq, Clone)]
pub enum SchemaError {
    #[error("Row key is missing tags or it is corrupted: {0}")]
    BadRowKey(String),
    #[error("Integer value @ {0} not on 8/4/2/1 bytes")]
    BadIntLength(usize),
    #[error("Floating point value @ {0} not on 8 or 4 bytes")]
    BadFloatLength(usize),
    #[error("Corrupted floating point value: {0} -- first 4 bytes are expected to be zeros.")]
    BadFloat(String),
    #[error("Corrupted value: couldn't break down into individual values (consumed {consumed} bytes, but was expecting to consume {expected})")]
    BadCompaction { consumed: usize, expected: usize },
    #[error("Corrupted compacted column: unknown meta byte {0:#04x}")]
    BadMeta(u8),
    #[error("value is NaN or Infinite: {0}")]
    NotFinite(f64),
    #[error("bad timestamp={0}")]
    BadTimestamp(u64),
    #[error("Second qualifier {0} is past the end of its hour (offset {1} s)")]
    BadQualifier(String, u32),
}

/// Uppercase hex, the way OpenTSDB prints UIDs and TSUIDs.
pub fn hex_upper(bytes: &[u8]) -> String {
    const H: &[u8; 16] = b"0123456789ABCDEF";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(H[(b >> 4) as usize] as char);
        s.push(H[(b & 15) as usize] as char);
    }
    s
}

/// Parses hex of either case; an odd-length string is left-padded with one `0` (OpenTSDB's rule).
pub fn parse_hex(s: &str) -> Option<Vec<u8>> {
    let padded;
    let s = if s.len() % 2 == 1 {
        padded = format!("0{s}");
        padded.as_str()
    } else {
        s
    };
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Java's `String.hashCode()` over UTF-16 code units (branch ids, leaf qualifiers).
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32))
}

/// Java's `Arrays.hashCode(byte[])` with signed bytes (salt buckets).
pub fn java_bytes_hash(b: &[u8]) -> i32 {
    b.iter().fold(1i32, |h, &x| {
        h.wrapping_mul(31).wrapping_add(x as i8 as i32)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_hashes_match_opentsdb_tree_examples() {
        for (name, hex) in [
            ("ROOT", "002678E2"),
            ("sys", "0001BECD"),
            ("cpu", "000181A8"),
            ("0", "00000030"),
            ("user", "0036EBCB"),
            ("web01", "06BC4C55"),
            ("bytes_sent", "530152EC"),
            ("web-01.lga.mysite.com", "247F7202"),
            ("mboard", "BF992A99"),
            ("sys.cpu.0", "CBBF5B09"),
            ("John Doe", "AE805CA5"),
        ] {
            assert_eq!(
                hex_upper(&java_string_hash(name).to_be_bytes()),
                hex,
                "{name}"
            );
        }
    }

    #[test]
    fn hex_round_trip_and_odd_padding() {
        assert_eq!(parse_hex("abc"), Some(vec![0x0a, 0xbc]));
        assert_eq!(parse_hex("00002A"), Some(vec![0, 0, 42]));
        assert_eq!(parse_hex("zz"), None);
        assert_eq!(hex_upper(&[0, 0x2a, 0xff]), "002AFF");
    }
}
