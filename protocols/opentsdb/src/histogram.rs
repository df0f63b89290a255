//! OpenTSDB 2.4's `SimpleHistogram` codec and the histogram input forms.
//!
//! Encoding (Kryo's `Output`): optional codec id byte; bucket count as a big-endian `i16`; per
//! bucket (in `(lower, upper)` order, as Java's `Float.compare`) the lower and upper bounds as
//! big-endian IEEE `f32` and the count as Kryo's positive-optimised varlong (7-bit groups, low
//! first, high bit = more; a 9th byte holds the last 8 bits); then underflow and overflow as
//! varlongs. Stored cells carry the id byte (`tsd.core.histograms.config`'s id of the codec).

use std::cmp::Ordering;

/// A bucket's bounds, ordered as OpenTSDB's `HistogramBucket.compareTo`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds(pub f32, pub f32);

impl Eq for Bounds {}

impl PartialOrd for Bounds {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for Bounds {
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.total_cmp(&o.0).then(self.1.total_cmp(&o.1))
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SimpleHistogram {
    pub buckets: std::collections::BTreeMap<Bounds, u64>,
    pub underflow: u64,
    pub overflow: u64,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HistogramError {
    #[error("Byte array shorter than 6 bytes detected")]
    TooShort,
    #[error("The histogram ends inside its data")]
    Truncated,
    #[error("Improperly formatted bucket: {0}")]
    BadBucket(String),
    #[error("Improperly formatted bounds: {0}")]
    BadBounds(String),
    #[error("Must have at least one bucket in the histogram.")]
    Empty,
    #[error("Too many buckets: {0}")]
    TooManyBuckets(usize),
}

fn put_varlong(out: &mut Vec<u8>, mut v: u64) {
    for _ in 0..8 {
        if v >> 7 == 0 {
            out.push(v as u8);
            return;
        }
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], HistogramError> {
        let s = self
            .b
            .get(self.i..self.i + N)
            .ok_or(HistogramError::Truncated)?;
        self.i += N;
        Ok(s.try_into().expect("length checked"))
    }

    fn varlong(&mut self) -> Result<u64, HistogramError> {
        let mut v = 0u64;
        for shift in (0..56).step_by(7) {
            let [b] = self.take::<1>()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        let [b] = self.take::<1>()?;
        Ok(v | u64::from(b) << 56)
    }
}

impl SimpleHistogram {
    /// The encoding, with the codec id byte first when given.
    pub fn encode(&self, id: Option<u8>) -> Vec<u8> {
        let mut o = Vec::with_capacity(4 + self.buckets.len() * 9);
        o.extend(id);
        o.extend_from_slice(&(self.buckets.len() as i16).to_be_bytes());
        for (b, n) in &self.buckets {
            o.extend_from_slice(&b.0.to_be_bytes());
            o.extend_from_slice(&b.1.to_be_bytes());
            put_varlong(&mut o, *n);
        }
        put_varlong(&mut o, self.underflow);
        put_varlong(&mut o, self.overflow);
        o
    }

    /// Decodes an encoding (skipping the id byte when `with_id`). Like OpenTSDB, a buffer
    /// under 6 bytes is refused before reading; trailing bytes are ignored.
    pub fn decode(raw: &[u8], with_id: bool) -> Result<SimpleHistogram, HistogramError> {
        if raw.len() < 6 {
            return Err(HistogramError::TooShort);
        }
        let mut r = Reader {
            b: raw,
            i: usize::from(with_id),
        };
        let n = i16::from_be_bytes(r.take::<2>()?);
        let mut h = SimpleHistogram::default();
        for _ in 0..n.max(0) {
            let lo = f32::from_be_bytes(r.take::<4>()?);
            let hi = f32::from_be_bytes(r.take::<4>()?);
            h.buckets.insert(Bounds(lo, hi), r.varlong()?);
        }
        h.underflow = r.varlong()?;
        h.overflow = r.varlong()?;
        Ok(h)
    }

    /// The telnet form `lo,hi=count:lo,hi=count:u=N:o=N` (`u`/`o` any case).
    pub fn parse_telnet(s: &str) -> Result<SimpleHistogram, HistogramError> {
        let mut h = SimpleHistogram::default();
        if s.is_empty() {
            return Err(HistogramError::Empty);
        }
        for bucket in s.split(':').filter(|b| !b.is_empty()) {
            let (k, v) = bucket
                .split_once('=')
                .filter(|(_, v)| !v.contains('='))
                .ok_or_else(|| HistogramError::BadBucket(bucket.into()))?;
            let n: i64 = v
                .parse()
                .map_err(|_| HistogramError::BadBucket(bucket.into()))?;
            match k.to_ascii_lowercase().as_str() {
                "u" => h.underflow = n as u64,
                "o" => h.overflow = n as u64,
                k => h
                    .add_bucket(k, n)
                    .map_err(|_| HistogramError::BadBounds(bucket.into()))?,
            }
        }
        Ok(h)
    }

    /// Adds a `"lo,hi"` bucket (the JSON `buckets` keys, the telnet bounds).
    pub fn add_bucket(&mut self, bounds: &str, count: i64) -> Result<(), HistogramError> {
        let bad = || HistogramError::BadBounds(bounds.into());
        let (lo, hi) = bounds.split_once(',').ok_or_else(bad)?;
        if hi.contains(',') {
            return Err(bad());
        }
        let lo: f32 = lo.trim().parse().map_err(|_| bad())?;
        let hi: f32 = hi.trim().parse().map_err(|_| bad())?;
        self.buckets.insert(Bounds(lo, hi), count as u64);
        Ok(())
    }

    /// OpenTSDB's `SimpleHistogram.percentile`: the middle of the first bucket whose
    /// cumulative share reaches `p` (in 1..=100; else -1).
    pub fn percentile(&self, p: f64) -> f64 {
        if !(1.0..=100.0).contains(&p) {
            return -1.0;
        }
        // Java sums the counts as `int`.
        let sum = self
            .buckets
            .values()
            .fold(0i32, |a, &n| a.wrapping_add(n as i32));
        let mut running = 0i64;
        for (b, &n) in &self.buckets {
            running += i64::from(n as i32);
            if running as f64 * 100.0 / f64::from(sum) >= p {
                // Float arithmetic, widened to double afterwards, as in Java.
                return f64::from((b.0 + b.1) / 2.0);
            }
        }
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kryo's writes, spelled out: big-endian short and float, the varlong.
    fn kryo(id: Option<u8>, buckets: &[(f32, f32, u64)], under: u64, over: u64) -> Vec<u8> {
        let mut o = Vec::new();
        o.extend(id);
        o.extend_from_slice(&(buckets.len() as u16).to_be_bytes());
        for &(lo, hi, n) in buckets {
            o.extend_from_slice(&lo.to_bits().to_be_bytes());
            o.extend_from_slice(&hi.to_bits().to_be_bytes());
            put_varlong(&mut o, n);
        }
        put_varlong(&mut o, under);
        put_varlong(&mut o, over);
        o
    }

    #[test]
    fn varlongs_as_kryo_writes_them() {
        let enc = |v| {
            let mut o = Vec::new();
            put_varlong(&mut o, v);
            o
        };
        assert_eq!(enc(0), [0]);
        assert_eq!(enc(127), [0x7f]);
        assert_eq!(enc(128), [0x80, 0x01]);
        assert_eq!(enc(300), [0xac, 0x02]);
        assert_eq!(enc(u64::MAX).len(), 9);
        for v in [0, 1, 127, 128, 16_383, 16_384, 1 << 55, u64::MAX] {
            let b = enc(v);
            assert_eq!(Reader { b: &b, i: 0 }.varlong().unwrap(), v);
        }
    }

    #[test]
    fn to_from_bytes_of_testsimplehistogram() {
        // TestSimpleHistogram.testToFromBytes: 8 buckets [1,2)=5 [2,3)=5 [3,4)=5, the rest 0,
        // underflow 0, overflow 2; with the id byte 42 and without.
        let b: Vec<(f32, f32, u64)> = (1..9)
            .map(|i| (i as f32, (i + 1) as f32, if i <= 3 { 5 } else { 0 }))
            .collect();
        let with_id = kryo(Some(42), &b, 0, 2);
        // The leading bytes pinned by hand: id, count 8, 1.0f, 2.0f, 5.
        assert_eq!(
            &with_id[..12],
            &[42, 0, 8, 0x3f, 0x80, 0, 0, 0x40, 0, 0, 0, 5]
        );
        let h = SimpleHistogram::decode(&with_id, true).unwrap();
        assert_eq!(h.buckets.len(), 8);
        assert_eq!(h.overflow, 2);
        assert_eq!(h.encode(Some(42)), with_id);
        let without = kryo(None, &b, 0, 2);
        assert_eq!(
            SimpleHistogram::decode(&without, false)
                .unwrap()
                .encode(None),
            without
        );
    }

    #[test]
    fn percentiles_of_testsimplehistogram() {
        // testSinglePercentile / testPercentileList.
        let h = SimpleHistogram::decode(
            &kryo(
                None,
                &[(1.0, 6.0, 5), (6.0, 10.0, 10), (10.0, 20.0, 1)],
                0,
                5,
            ),
            false,
        )
        .unwrap();
        assert_eq!(h.percentile(50.0), 8.0);
        assert_eq!(h.percentile(1000.0), -1.0);
        let h = SimpleHistogram::decode(
            &kryo(
                None,
                &[
                    (1.0, 6.0, 5),
                    (6.0, 10.0, 10),
                    (10.0, 20.0, 1),
                    (20.0, 40.0, 0),
                ],
                0,
                5,
            ),
            false,
        )
        .unwrap();
        assert_eq!((h.percentile(50.0), h.percentile(99.0)), (8.0, 15.0));
    }

    #[test]
    fn incomplete_bytes_refused() {
        // testIncompletByteArray: a bucket count and nothing else.
        assert_eq!(
            SimpleHistogram::decode(&[0, 4], false),
            Err(HistogramError::TooShort)
        );
        assert_eq!(
            SimpleHistogram::decode(&[0, 4, 0x3f, 0x80, 0, 0], false),
            Err(HistogramError::Truncated)
        );
    }

    #[test]
    fn telnet_form_and_bucket_order() {
        let h = SimpleHistogram::parse_telnet("1,2=5:0,1=3:U=1:o=2").unwrap();
        assert_eq!(
            h.buckets.keys().next(),
            Some(&Bounds(0.0, 1.0)),
            "sorted by bounds"
        );
        assert_eq!((h.underflow, h.overflow), (1, 2));
        assert_eq!(
            h.encode(Some(0)),
            kryo(Some(0), &[(0.0, 1.0, 3), (1.0, 2.0, 5)], 1, 2)
        );
        for bad in ["1,2", "1,2=x", "1=2", "1,2,3=4", "a,b=1"] {
            assert!(SimpleHistogram::parse_telnet(bad).is_err(), "{bad}");
        }
    }
}
