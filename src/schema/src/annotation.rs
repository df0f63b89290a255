//! Annotation cells in `tsdb`: qualifier `0x01` + plain offset (2-byte seconds or 4-byte ms).

use super::column::ANNOTATION_PREFIX;

/// The qualifier OpenTSDB computes for an annotation starting at `start` (s or ms).
/// Replicates its quirk: a start divisible by 1000 is divided by 1000 first, even when it
/// already was in seconds, so that updates address the same cell real OpenTSDB wrote.
pub fn qualifier(start: u64) -> Vec<u8> {
    let ts = if start.is_multiple_of(1000) {
        start / 1000
    } else {
        start
    };
    let ms = super::rowkey::is_ms(ts);
    let secs = if ms { ts / 1000 } else { ts };
    let base = secs - secs % 3600;
    let mut q = vec![ANNOTATION_PREFIX];
    if ms {
        q.extend_from_slice(&((ts - base * 1000) as u32).to_be_bytes());
    } else {
        q.extend_from_slice(&((ts - base) as u16).to_be_bytes());
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_hex;

    #[test]
    fn qualifiers_from_opentsdb_tests() {
        assert_eq!(qualifier(1388450562), parse_hex("010A02").unwrap());
        assert_eq!(qualifier(1388450562500), parse_hex("01002719C4").unwrap());
        assert_eq!(qualifier(1328140800), parse_hex("010000").unwrap());
        assert_eq!(qualifier(1328140800500), parse_hex("01000001F4").unwrap());
        assert_eq!(qualifier(1292148123), parse_hex("01007B").unwrap());
    }
}
