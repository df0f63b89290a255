//! Order-preserving encoding of (row, qualifier) into one engine key, so that an engine sorting
//! plain bytes yields HBase's order: rows by unsigned bytes, then qualifiers within a row.
//! Row bytes escape 0x00 as `00 FF` and end with `00 01`; the qualifier follows raw.

const ESC: u8 = 0xFF;
const TERM: u8 = 0x01;

pub fn encode_row_prefix(row: &[u8], out: &mut Vec<u8>) {
    for &b in row {
        out.push(b);
        if b == 0 {
            out.push(ESC);
        }
    }
}

/// The key of a cell.
pub fn encode(row: &[u8], qualifier: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(row.len() + qualifier.len() + 4);
    encode_row_prefix(row, &mut k);
    k.extend_from_slice(&[0, TERM]);
    k.extend_from_slice(qualifier);
    k
}

/// Every key of one row starts with this.
pub fn row_prefix(row: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(row.len() + 4);
    encode_row_prefix(row, &mut k);
    k.extend_from_slice(&[0, TERM]);
    k
}

/// A bound that sorts before every key of `row` and after every key of smaller rows.
pub fn row_bound(row: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(row.len() + 2);
    encode_row_prefix(row, &mut k);
    k
}

/// Splits an engine key back into (row, qualifier).
pub fn decode(key: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    let end = row_end(key)?;
    let mut row = Vec::with_capacity(end);
    unescape_row(&key[..end], &mut row);
    Some((row, &key[end + 2..]))
}

/// Where an engine key's row ends: the index of its terminator (`00 01`), so `key[..end]` is
/// the row as encoded (equal encodings, equal rows) and the qualifier starts at `end + 2`.
pub fn row_end(key: &[u8]) -> Option<usize> {
    let mut i = 0;
    while let Some(at) = key[i..].iter().position(|&b| b == 0) {
        let z = i + at;
        match key.get(z + 1) {
            Some(&ESC) => i = z + 2,
            Some(&TERM) => return Some(z),
            _ => return None,
        }
    }
    None
}

/// Replaces `out` with the row `encoded` (a key's bytes before [`row_end`]) stands for.
pub fn unescape_row(encoded: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut i = 0;
    while i < encoded.len() {
        out.push(encoded[i]);
        // An escaped zero is `00 FF`: the FF is not part of the row.
        i += if encoded[i] == 0 { 2 } else { 1 };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn round_trip(row in proptest::collection::vec(any::<u8>(), 0..20), q in proptest::collection::vec(any::<u8>(), 0..8)) {
            let k = encode(&row, &q);
            let (r, qq) = decode(&k).unwrap();
            prop_assert_eq!(r, row);
            prop_assert_eq!(qq, &q[..]);
        }

        #[test]
        fn order_matches_hbase(a in proptest::collection::vec(0u8..3, 0..6), b in proptest::collection::vec(0u8..3, 0..6),
                               qa in proptest::collection::vec(any::<u8>(), 0..3), qb in proptest::collection::vec(any::<u8>(), 0..3)) {
            let hbase = (a.clone(), qa.clone()).cmp(&(b.clone(), qb.clone()));
            prop_assert_eq!(encode(&a, &qa).cmp(&encode(&b, &qb)), hbase);
            // bounds: row_bound(x) <= keys of rows >= x, > keys of rows < x
            let ka = encode(&a, &qa);
            prop_assert_eq!(ka.as_slice() >= row_bound(&b).as_slice(), a >= b);
            // a key's row as encoded tells rows apart without decoding them
            let kb = encode(&b, &qb);
            prop_assert_eq!(ka[..row_end(&ka).unwrap()] == kb[..row_end(&kb).unwrap()], a == b);
        }
    }
}
