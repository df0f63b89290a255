//! Order-preserving encoding of (row, qualifier) into one engine key, so that an engine sorting
//! plain bytes yields HBase's order: rows by unsigned bytes, then qualifiers within a row.
//! Row bytes escape 0x00 as `00 FF` and end with `00 01`; the qualifier follows raw, unless
//! it is long (see [`Qualifiers`]).

const ESC: u8 = 0xFF;
const TERM: u8 = 0x01;

/// How a key ends. A compacted column's qualifier is two or four bytes a point (720 for an
/// hour at 10 s): whole in the key, it made every key that long, and stepping over a row or
/// seeking to one copied and compared those bytes (and indexes held them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Qualifiers {
    /// Every qualifier whole (stores made before the cut form).
    Whole,
    /// A qualifier longer than [`CUT_AT`] bytes ends the key as its first `CUT_AT` bytes and the
    /// first 128 bits of its SHA-256, and the value then carries it whole; shorter ones are
    /// whole. Two qualifiers of one row share a key only if they share those bits: a
    /// cryptographic hash, so not by chance, nor by a sender choosing its timestamps (a fast
    /// non-cryptographic hash can be made to collide on long inputs). Within a row, cut
    /// qualifiers that share their first `CUT_AT` bytes come out of the engine in hash order,
    /// and readers put a row's cells back in qualifier order.
    Cut,
}

/// See [`Qualifiers::Cut`].
pub const CUT_AT: usize = 32;
const HASH_LEN: usize = 16;

impl Qualifiers {
    /// Whether a qualifier `len` bytes long is cut in keys of this form. A cut one ends its key
    /// in `CUT_AT + HASH_LEN` bytes, so this also tells, from the bytes after a key's row
    /// terminator, whether the key holds a cut qualifier (whose whole form is in the value).
    pub fn cuts(self, len: usize) -> bool {
        self == Qualifiers::Cut && len > CUT_AT
    }

    /// How many bytes a qualifier `len` bytes long takes at the end of its key.
    pub fn in_key_len(self, len: usize) -> usize {
        if self.cuts(len) {
            CUT_AT + HASH_LEN
        } else {
            len
        }
    }

    fn push(self, q: &[u8], out: &mut Vec<u8>) {
        if self.cuts(q.len()) {
            out.extend_from_slice(&q[..CUT_AT]);
            use sha2::Digest;
            out.extend_from_slice(&sha2::Sha256::digest(q)[..HASH_LEN]);
        } else {
            out.extend_from_slice(q);
        }
    }
}

pub fn encode_row_prefix(row: &[u8], out: &mut Vec<u8>) {
    for &b in row {
        out.push(b);
        if b == 0 {
            out.push(ESC);
        }
    }
}

/// The key of a cell.
pub fn encode(row: &[u8], qualifier: &[u8], form: Qualifiers) -> Vec<u8> {
    let mut k = Vec::with_capacity(row.len() + qualifier.len().min(CUT_AT + HASH_LEN) + 4);
    encode_row_prefix(row, &mut k);
    k.extend_from_slice(&[0, TERM]);
    form.push(qualifier, &mut k);
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
            let k = encode(&row, &q, Qualifiers::Whole);
            let (r, qq) = decode(&k).unwrap();
            prop_assert_eq!(r, row);
            prop_assert_eq!(qq, &q[..]);
        }

        /// Cut keys keep rows apart and in order, end short, and are whole up to the cut.
        #[test]
        fn cut_keys(a in proptest::collection::vec(0u8..3, 0..6), b in proptest::collection::vec(0u8..3, 0..6),
                    qa in proptest::collection::vec(0u8..2, 0..80), qb in proptest::collection::vec(0u8..2, 0..80)) {
            let (ka, kb) = (encode(&a, &qa, Qualifiers::Cut), encode(&b, &qb, Qualifiers::Cut));
            if a != b {
                prop_assert_eq!(ka.cmp(&kb), a.cmp(&b));
            }
            let (r, in_key) = decode(&ka).unwrap();
            prop_assert_eq!(&r, &a);
            prop_assert!(in_key.len() <= CUT_AT + HASH_LEN);
            prop_assert_eq!(Qualifiers::Cut.cuts(in_key.len()), qa.len() > CUT_AT);
            prop_assert_eq!(Qualifiers::Cut.in_key_len(qa.len()), in_key.len());
            if qa.len() <= CUT_AT {
                prop_assert_eq!(&ka, &encode(&a, &qa, Qualifiers::Whole));
            }
            prop_assert_eq!(ka == kb, (&a, &qa) == (&b, &qb));
        }

        #[test]
        fn order_matches_hbase(a in proptest::collection::vec(0u8..3, 0..6), b in proptest::collection::vec(0u8..3, 0..6),
                               qa in proptest::collection::vec(any::<u8>(), 0..3), qb in proptest::collection::vec(any::<u8>(), 0..3)) {
            let hbase = (a.clone(), qa.clone()).cmp(&(b.clone(), qb.clone()));
            prop_assert_eq!(encode(&a, &qa, Qualifiers::Whole).cmp(&encode(&b, &qb, Qualifiers::Whole)), hbase);
            // bounds: row_bound(x) <= keys of rows >= x, > keys of rows < x
            let ka = encode(&a, &qa, Qualifiers::Whole);
            prop_assert_eq!(ka.as_slice() >= row_bound(&b).as_slice(), a >= b);
            // a key's row as encoded tells rows apart without decoding them
            let kb = encode(&b, &qb, Qualifiers::Whole);
            prop_assert_eq!(ka[..row_end(&ka).unwrap()] == kb[..row_end(&kb).unwrap()], a == b);
        }
    }
}
