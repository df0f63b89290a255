//! Data point columns: qualifiers (2-byte seconds, 4-byte ms), flags and values.

use super::rowkey::{is_ms, seconds};
use super::SchemaError;

pub const FLAG_FLOAT: u8 = 0x8;
pub const LENGTH_MASK: u8 = 0x7;
pub const FLAGS_MASK: u8 = 0xF;
/// Odd-length qualifiers start with one of these prefixes.
pub const ANNOTATION_PREFIX: u8 = 0x01;
pub const APPEND_PREFIX: u8 = 0x05;
pub const HISTOGRAM_PREFIX: u8 = 0x06;
pub const APPEND_QUALIFIER: [u8; 3] = [APPEND_PREFIX, 0, 0];
/// Meta byte of a compacted column mixing second and ms qualifiers.
pub const MS_MIXED_COMPACT: u8 = 0x01;

/// A point value as stored: integers keep their integer-ness.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DataValue {
    Int(i64),
    F32(f32),
    F64(f64),
}

impl DataValue {
    pub fn as_f64(self) -> f64 {
        match self {
            DataValue::Int(i) => i as f64,
            DataValue::F32(f) => f as f64,
            DataValue::F64(f) => f,
        }
    }
    pub fn is_int(self) -> bool {
        matches!(self, DataValue::Int(_))
    }
}

/// One point as its qualifier and value bytes; fixed size, so merging never allocates per point.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct RawPoint {
    q: [u8; 4],
    qlen: u8,
    v: [u8; 8],
    vlen: u8,
}

impl std::fmt::Debug for RawPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "RawPoint(q={:02x?}, v={:02x?})",
            self.qualifier(),
            self.value_bytes()
        )
    }
}

impl RawPoint {
    /// Encodes a point at `ts` (seconds, or ms when the upper bits are set) in the row of `base`.
    pub fn encode(ts: u64, base: u32, value: DataValue) -> Result<RawPoint, SchemaError> {
        Self::encode_checked(ts, base, value, false)
    }

    /// Like [`RawPoint::encode`], but a non-finite f64 (NaN with its exact bits, such as
    /// Prometheus' staleness marker, or ±Inf) is stored as the ordinary 8-byte float column it
    /// is. Only the Prometheus write path uses this; OpenTSDB inputs keep rejecting them.
    pub fn encode_allow_non_finite(
        ts: u64,
        base: u32,
        value: DataValue,
    ) -> Result<RawPoint, SchemaError> {
        Self::encode_checked(ts, base, value, true)
    }

    fn encode_checked(
        ts: u64,
        base: u32,
        value: DataValue,
        allow_non_finite: bool,
    ) -> Result<RawPoint, SchemaError> {
        super::rowkey::check_timestamp(ts)?;
        let (flags, v, vlen) = match value {
            DataValue::F64(f) if allow_non_finite && !f.is_finite() => {
                (FLAG_FLOAT | 7, f.to_bits().to_be_bytes(), 8)
            }
            _ => encode_value(value)?,
        };
        let mut p = RawPoint {
            q: [0; 4],
            qlen: 0,
            v,
            vlen,
        };
        if is_ms(ts) {
            // Offsets are computed from the wrapped base exactly as OpenTSDB does.
            let off = (ts - seconds(ts) / 3600 * 3600 * 1000) as u32;
            let q = 0xF000_0000u32 | (off << 6) | flags as u32;
            p.q = q.to_be_bytes();
            p.qlen = 4;
        } else {
            let off = (ts - base as u64) as u16;
            let q = (off << 4) | flags as u16;
            p.q[..2].copy_from_slice(&q.to_be_bytes());
            p.qlen = 2;
        }
        Ok(p)
    }

    /// Builds a point from stored bytes; `q` must be one 2- or 4-byte qualifier.
    pub fn from_parts(q: &[u8], v: &[u8]) -> Option<RawPoint> {
        if !(q.len() == 2 || q.len() == 4) || v.len() > 8 || v.is_empty() {
            return None;
        }
        let mut p = RawPoint {
            q: [0; 4],
            qlen: q.len() as u8,
            v: [0; 8],
            vlen: v.len() as u8,
        };
        p.q[..q.len()].copy_from_slice(q);
        p.v[..v.len()].copy_from_slice(v);
        Some(p)
    }

    pub fn qualifier(&self) -> &[u8] {
        &self.q[..self.qlen as usize]
    }
    pub fn value_bytes(&self) -> &[u8] {
        &self.v[..self.vlen as usize]
    }
    pub fn is_ms(&self) -> bool {
        self.qlen == 4
    }
    pub fn flags(&self) -> u8 {
        self.q[self.qlen as usize - 1] & FLAGS_MASK
    }

    /// Offset from the row's base time in milliseconds (how points are ordered and compared).
    pub fn offset_ms(&self) -> u32 {
        if self.qlen == 4 {
            (u32::from_be_bytes(self.q) & 0x0FFF_FFC0) >> 6
        } else {
            (u16::from_be_bytes([self.q[0], self.q[1]]) >> 4) as u32 * 1000
        }
    }

    /// Absolute timestamp in milliseconds for a row of `base`.
    pub fn timestamp_ms(&self, base: u32) -> u64 {
        base as u64 * 1000 + self.offset_ms() as u64
    }

    pub fn value(&self) -> Result<DataValue, SchemaError> {
        decode_value(self.flags(), self.value_bytes(), 0)
    }
}

/// Integers on the smallest signed width; floats as given (f32 on 4 bytes, f64 on 8).
pub fn encode_value(value: DataValue) -> Result<(u8, [u8; 8], u8), SchemaError> {
    let mut out = [0u8; 8];
    Ok(match value {
        DataValue::Int(i) => {
            let n = if i8::try_from(i).is_ok() {
                1
            } else if i16::try_from(i).is_ok() {
                2
            } else if i32::try_from(i).is_ok() {
                4
            } else {
                8
            };
            out[..n].copy_from_slice(&i.to_be_bytes()[8 - n..]);
            (n as u8 - 1, out, n as u8)
        }
        DataValue::F32(f) => {
            if !f.is_finite() {
                return Err(SchemaError::NotFinite(f as f64));
            }
            out[..4].copy_from_slice(&f.to_be_bytes());
            (FLAG_FLOAT | 3, out, 4)
        }
        DataValue::F64(f) => {
            if !f.is_finite() {
                return Err(SchemaError::NotFinite(f));
            }
            out.copy_from_slice(&f.to_be_bytes());
            (FLAG_FLOAT | 7, out, 8)
        }
    })
}

/// Decodes value bytes under `flags`; `at` is the position reported in errors.
pub fn decode_value(flags: u8, v: &[u8], at: usize) -> Result<DataValue, SchemaError> {
    let len = (flags & LENGTH_MASK) as usize + 1;
    // Each width read as its own type: a copy of a variable length into an 8-byte buffer
    // is a call to memmove per point, a third of a row's decoding.
    if flags & FLAG_FLOAT != 0 {
        match (len, v) {
            (4, &[a, b, c, d]) => Ok(DataValue::F32(f32::from_be_bytes([a, b, c, d]))),
            (8, &[a, b, c, d, e, f, g, h]) => {
                Ok(DataValue::F64(f64::from_be_bytes([a, b, c, d, e, f, g, h])))
            }
            _ => Err(SchemaError::BadFloatLength(at)),
        }
    } else {
        match (len, v) {
            (1, &[a]) => Ok(DataValue::Int(a as i8 as i64)),
            (2, &[a, b]) => Ok(DataValue::Int(i16::from_be_bytes([a, b]) as i64)),
            (4, &[a, b, c, d]) => Ok(DataValue::Int(i32::from_be_bytes([a, b, c, d]) as i64)),
            (8, &[a, b, c, d, e, f, g, h]) => {
                Ok(DataValue::Int(i64::from_be_bytes([a, b, c, d, e, f, g, h])))
            }
            _ => Err(SchemaError::BadIntLength(at)),
        }
    }
}

/// Qualifier length at `q[i]`: 4 when the first byte has the high nibble `F`, else 2.
#[inline]
pub fn qualifier_len_at(first: u8) -> usize {
    if first & 0xF0 == 0xF0 {
        4
    } else {
        2
    }
}

/// Kind of a `t` column, told apart by its qualifier as OpenTSDB does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    Single,
    Compacted,
    Annotation,
    Append,
    Histogram,
    Unknown,
}

pub fn column_kind(q: &[u8]) -> ColumnKind {
    if q.is_empty() {
        return ColumnKind::Unknown;
    }
    if q.len() % 2 == 1 {
        return match q[0] {
            ANNOTATION_PREFIX => ColumnKind::Annotation,
            APPEND_PREFIX => ColumnKind::Append,
            HISTOGRAM_PREFIX => ColumnKind::Histogram,
            _ => ColumnKind::Unknown,
        };
    }
    match q.len() {
        2 => ColumnKind::Single,
        4 if q[0] & 0xF0 == 0xF0 => ColumnKind::Single,
        _ => ColumnKind::Compacted,
    }
}

/// Decodes a single-point column, applying OpenTSDB's read-side repairs of historic encodings.
/// Returns the point and whether a repair was needed.
pub fn decode_single(q: &[u8], v: &[u8]) -> Result<(RawPoint, bool), SchemaError> {
    // A 2-byte qualifier starting with nibble F (offset ≥ 3840 s) is no second of this hour,
    // and inside a compacted column it would read as a 4-byte ms qualifier.
    if q.len() == 2 && q[0] & 0xF0 == 0xF0 {
        return Err(SchemaError::BadQualifier(
            super::hex_upper(q),
            (u16::from_be_bytes([q[0], q[1]]) >> 4) as u32,
        ));
    }
    let flags = q[q.len() - 1] & FLAGS_MASK;
    let mut q2 = [0u8; 4];
    q2[..q.len()].copy_from_slice(q);
    let mut val = v;
    let mut fixed = false;
    if flags & FLAG_FLOAT != 0 && flags & LENGTH_MASK == 3 && v.len() == 8 {
        // 1.x wrote 4-byte floats on 8 bytes, the first four being zero.
        if v[..4].iter().any(|&b| b != 0) {
            return Err(SchemaError::BadFloat(format!("{v:02x?} flags={flags:#x}")));
        }
        val = &v[4..];
        fixed = true;
    } else if q.len() == 2
        && !v.is_empty()
        && v.len() <= 8
        && (flags & LENGTH_MASK) as usize + 1 != v.len()
    {
        q2[1] = (q2[1] & !LENGTH_MASK) | (v.len() as u8 - 1);
        fixed = true;
    }
    let p = RawPoint::from_parts(&q2[..q.len()], val).ok_or(SchemaError::BadIntLength(0))?;
    p.value()?;
    Ok((p, fixed))
}

/// Walks a compacted column: concatenated qualifiers, concatenated values plus the meta byte.
pub fn decode_compacted(q: &[u8], v: &[u8], out: &mut Vec<RawPoint>) -> Result<(), SchemaError> {
    let mut qi = 0;
    let mut vi = 0;
    while qi < q.len() {
        let ql = qualifier_len_at(q[qi]);
        if qi + ql > q.len() {
            return Err(SchemaError::BadCompaction {
                consumed: vi,
                expected: v.len().saturating_sub(1),
            });
        }
        let qq = &q[qi..qi + ql];
        let flags = qq[ql - 1] & FLAGS_MASK;
        let vl = (flags & LENGTH_MASK) as usize + 1;
        if vi + vl > v.len() {
            return Err(SchemaError::BadCompaction {
                consumed: vi + vl,
                expected: v.len().saturating_sub(1),
            });
        }
        decode_value(flags, &v[vi..vi + vl], vi)?;
        out.push(RawPoint::from_parts(qq, &v[vi..vi + vl]).expect("lengths checked"));
        qi += ql;
        vi += vl;
    }
    if vi + 1 != v.len() {
        return Err(SchemaError::BadCompaction {
            consumed: vi,
            expected: v.len().saturating_sub(1),
        });
    }
    match v[vi] {
        0 | MS_MIXED_COMPACT => Ok(()),
        m => Err(SchemaError::BadMeta(m)),
    }
}

/// [`decode_compacted`]'s checks in one pass straight to (offset ms, value), for reads.
/// Stops early when `f` returns false; returns false when the column is malformed or was
/// stopped (the caller then takes the general path, which reports what is wrong).
pub fn walk_compacted(q: &[u8], v: &[u8], mut f: impl FnMut(u32, DataValue) -> bool) -> bool {
    walk_compacted_where(
        q,
        v,
        |_| true,
        |off, val| val.is_some_and(|val| f(off, val)),
    )
}

/// Whether [`decode_value`] takes a value of these flags (its length is theirs): told from the
/// flags alone, so a walk can check a value it does not decode.
#[inline]
fn value_decodes(flags: u8) -> bool {
    let len = (flags & LENGTH_MASK) + 1;
    if flags & FLAG_FLOAT != 0 {
        matches!(len, 4 | 8)
    } else {
        matches!(len, 1 | 2 | 4 | 8)
    }
}

/// [`walk_compacted`] that decodes only the values whose offset `wanted` accepts: `f` gets
/// (offset ms, Some(value)) for those and (offset ms, None) for the rest, whose values are
/// checked as [`decode_value`] checks them but not read. A read of a few minutes of an hour's
/// row walks every qualifier (the lanes check the order of all of them) but decodes only the
/// window's values. Returns what [`walk_compacted`] returns for the same column and `f`.
pub fn walk_compacted_where(
    q: &[u8],
    v: &[u8],
    wanted: impl Fn(u32) -> bool,
    mut f: impl FnMut(u32, Option<DataValue>) -> bool,
) -> bool {
    let (mut qi, mut vi) = (0, 0);
    while qi < q.len() {
        let ms = q[qi] & 0xF0 == 0xF0;
        let ql = if ms { 4 } else { 2 };
        if qi + ql > q.len() {
            return false;
        }
        let flags = q[qi + ql - 1] & FLAGS_MASK;
        let vl = (flags & LENGTH_MASK) as usize + 1;
        if vi + vl > v.len() {
            return false;
        }
        let off = if ms {
            (u32::from_be_bytes([q[qi], q[qi + 1], q[qi + 2], q[qi + 3]]) & 0x0FFF_FFC0) >> 6
        } else {
            (u16::from_be_bytes([q[qi], q[qi + 1]]) >> 4) as u32 * 1000
        };
        let val = if wanted(off) {
            let Ok(val) = decode_value(flags, &v[vi..vi + vl], vi) else {
                return false;
            };
            Some(val)
        } else if value_decodes(flags) {
            None
        } else {
            return false;
        };
        if !f(off, val) {
            return false;
        }
        qi += ql;
        vi += vl;
    }
    vi + 1 == v.len() && matches!(v[vi], 0 | MS_MIXED_COMPACT)
}

/// Walks an append column: `q v q v …` in arrival order, no meta byte.
pub fn decode_append(v: &[u8], out: &mut Vec<RawPoint>) -> Result<(), SchemaError> {
    let mut i = 0;
    while i < v.len() {
        let ql = qualifier_len_at(v[i]);
        if i + ql > v.len() {
            return Err(SchemaError::BadCompaction {
                consumed: i,
                expected: v.len(),
            });
        }
        let qq = &v[i..i + ql];
        let flags = qq[ql - 1] & FLAGS_MASK;
        let vl = (flags & LENGTH_MASK) as usize + 1;
        if i + ql + vl > v.len() {
            return Err(SchemaError::BadCompaction {
                consumed: i + ql + vl,
                expected: v.len(),
            });
        }
        let vv = &v[i + ql..i + ql + vl];
        decode_value(flags, vv, i + ql)?;
        out.push(RawPoint::from_parts(qq, vv).expect("lengths checked"));
        i += ql + vl;
    }
    Ok(())
}

/// The points of a column [`build_column`] made, in its order, onto `out`; how many. No checks
/// beyond the lengths: for columns this process built and holds (a stored column is read with
/// [`decode_compacted`]).
pub fn split_built(q: &[u8], v: &[u8], out: &mut Vec<RawPoint>) -> usize {
    let (mut qi, mut vi, mut n) = (0, 0, 0);
    while qi < q.len() {
        let ql = qualifier_len_at(q[qi]);
        let Some(qq) = q.get(qi..qi + ql) else { break };
        let vl = (qq[ql - 1] & LENGTH_MASK) as usize + 1;
        let Some(p) = v
            .get(vi..vi + vl)
            .and_then(|vv| RawPoint::from_parts(qq, vv))
        else {
            break;
        };
        out.push(p);
        (qi, vi, n) = (qi + ql, vi + vl, n + 1);
    }
    n
}

/// How many points a column [`build_column`] made holds: one per qualifier.
pub fn built_len(q: &[u8]) -> usize {
    let (mut qi, mut n) = (0, 0);
    while qi < q.len() {
        qi += qualifier_len_at(q[qi]);
        n += 1;
    }
    n
}

/// Builds one column from points already sorted by offset and free of duplicates:
/// a plain cell for one point, else a compacted column with its meta byte.
pub fn build_column(points: &[RawPoint]) -> (Vec<u8>, Vec<u8>) {
    if let [p] = points {
        return (p.qualifier().to_vec(), p.value_bytes().to_vec());
    }
    let mut q = Vec::with_capacity(points.len() * 2);
    let mut v = Vec::with_capacity(points.len() * 5 + 1);
    let (mut any_s, mut any_ms) = (false, false);
    for p in points {
        q.extend_from_slice(p.qualifier());
        v.extend_from_slice(p.value_bytes());
        if p.is_ms() {
            any_ms = true
        } else {
            any_s = true
        }
    }
    v.push(if any_s && any_ms { MS_MIXED_COMPACT } else { 0 });
    (q, v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A built column splits back into its points, one or many, seconds and milliseconds,
    /// every value length.
    #[test]
    fn a_built_column_splits_back_into_its_points() {
        let base = 1356998400u32;
        let values = [
            DataValue::Int(5),
            DataValue::Int(300),
            DataValue::Int(70_000),
            DataValue::Int(1 << 40),
            DataValue::F32(1.5),
            DataValue::F64(0.1),
        ];
        let mut points: Vec<RawPoint> = values
            .iter()
            .enumerate()
            .map(|(i, v)| RawPoint::encode(base as u64 + i as u64 * 7, base, *v).unwrap())
            .collect();
        points
            .push(RawPoint::encode(base as u64 * 1000 + 50_001, base, DataValue::Int(-2)).unwrap());
        for n in 1..=points.len() {
            let (q, v) = build_column(&points[..n]);
            let mut back = Vec::new();
            assert_eq!(split_built(&q, &v, &mut back), n);
            assert_eq!(built_len(&q), n);
            assert_eq!(format!("{back:?}"), format!("{:?}", &points[..n]));
        }
    }

    #[test]
    fn non_finite_floats_only_through_the_lenient_encoder() {
        let stale = f64::from_bits(0x7ff0_0000_0000_0002);
        assert!(RawPoint::encode(1356998400, 1356998400, DataValue::F64(stale)).is_err());
        for v in [stale, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let p = RawPoint::encode_allow_non_finite(1356998400, 1356998400, DataValue::F64(v))
                .unwrap();
            assert_eq!(p.qualifier(), &[0x00, 0x0F]);
            assert_eq!(p.value_bytes(), &v.to_bits().to_be_bytes());
            let DataValue::F64(back) = p.value().unwrap() else {
                panic!("not a float")
            };
            assert_eq!(back.to_bits(), v.to_bits());
        }
    }
    use crate::parse_hex;
    use crate::rowkey::base_time;

    fn h(s: &str) -> Vec<u8> {
        parse_hex(&s.replace(' ', "")).unwrap()
    }

    fn enc(ts: u64, v: DataValue) -> (Vec<u8>, Vec<u8>) {
        let p = RawPoint::encode(ts, base_time(ts), v).unwrap();
        (p.qualifier().to_vec(), p.value_bytes().to_vec())
    }

    #[test]
    fn write_examples_from_opentsdb_tests() {
        use DataValue::*;
        for (ts, v, q, val) in [
            (1356998400u64, Int(42), "0000", "2A"),
            (1356998400, Int(-42), "0000", "D6"),
            (1356998400, Int(257), "0001", "0101"),
            (1356998400, Int(-257), "0001", "FEFF"),
            (1356998400, Int(65537), "0003", "00010001"),
            (1356998400, Int(-65537), "0003", "FFFEFFFF"),
            (1356998400, Int(4294967296), "0007", "0000000100000000"),
            (1356998400, Int(-4294967296), "0007", "FFFFFFFF00000000"),
            (1356998400, F32(42.5), "000B", "422A0000"),
            (1356998400, F32(-42.5), "000B", "C22A0000"),
            (1356998400, F64(12.3), "000F", "402899999999999A"),
            (1357001999, Int(42), "E0F0", "2A"),
            (1357001999, F32(42.5), "E0FB", "422A0000"),
            (1356998400500, Int(42), "F0007D00", "2A"),
            (1356998400500, F32(42.5), "F0007D0B", "422A0000"),
            (1356998400000, Int(42), "F0000000", "2A"),
            (0, Int(42), "0000", "2A"),
            (1, Int(42), "0010", "2A"),
            (4294967295, Int(42), "69F0", "2A"),
            (4294967296, Int(42), "F0A36000", "2A"),
            (4294967295000, Int(42), "F6774600", "2A"),
            (9999999999999, Int(42), "FAAE5FC0", "2A"),
        ] {
            assert_eq!(enc(ts, v), (h(q), h(val)), "ts={ts} v={v:?}");
        }
        assert_eq!(enc(1356998403, Int(i64::MAX)).0, h("0037"));
        assert_eq!(enc(1356998400008, Int(i64::MAX)).0, h("F0000207"));
        assert_eq!(enc(1357001999999, Int(i64::MAX)).0, h("FDBB9FC7"));
        assert!(RawPoint::encode(10000000000000, 0, Int(1)).is_err());
        assert!(RawPoint::encode(1, 0, F64(f64::NAN)).is_err());
        assert!(RawPoint::encode(1, 0, F32(f32::INFINITY)).is_err());
    }

    #[test]
    fn decoding_offsets() {
        let base = 1356998400;
        let p = RawPoint::from_parts(&h("0037"), &[0; 8]).unwrap();
        assert_eq!(p.timestamp_ms(base), 1356998403000);
        let p = RawPoint::from_parts(&h("F0000207"), &[0; 8]).unwrap();
        assert_eq!(p.offset_ms(), 8);
        let p = RawPoint::from_parts(&h("F0000047"), &[0; 8]).unwrap();
        assert_eq!(p.offset_ms(), 1);
        assert_eq!(p.value().unwrap(), DataValue::Int(0));
    }

    #[test]
    fn compacted_column_layout() {
        let a = RawPoint::from_parts(&h("0007"), &h("0000000000000004")).unwrap();
        let b = RawPoint::from_parts(&h("0017"), &h("0000000000000005")).unwrap();
        let (q, v) = build_column(&[a, b]);
        assert_eq!(q, h("00070017"));
        assert_eq!(v, h("0000000000000004 0000000000000005 00"));
        let mut out = vec![];
        decode_compacted(&q, &v, &mut out).unwrap();
        assert_eq!(out, vec![a, b]);

        let m = RawPoint::from_parts(&h("F0000107"), &h("0000000000000005")).unwrap();
        let (q, v) = build_column(&[a, m]);
        assert_eq!(q, h("0007F0000107"));
        assert_eq!(*v.last().unwrap(), 1);

        let (q, v) = build_column(&[a]);
        assert_eq!((q, v), (h("0007"), h("0000000000000004")));

        let mut out = vec![];
        assert!(matches!(
            decode_compacted(&h("00070017"), &h("0000000000000004 00"), &mut out),
            Err(SchemaError::BadCompaction { .. })
        ));
        assert!(matches!(
            decode_compacted(&h("00000010"), &h("0102 07"), &mut out),
            Err(SchemaError::BadMeta(7))
        ));
    }

    #[test]
    fn single_cell_repairs() {
        let (p, fixed) = decode_single(&h("0003"), &h("0000000000000004")).unwrap();
        assert!(fixed);
        assert_eq!(p.qualifier(), h("0007"));
        let (p, _) = decode_single(&h("0027"), &h("00000004")).unwrap();
        assert_eq!(p.qualifier(), h("0023"));
        let (p, fixed) = decode_single(&h("001B"), &h("00000000 40866666")).unwrap();
        assert!(fixed);
        assert_eq!(p.value_bytes(), h("40866666"));
        assert!(decode_single(&h("001B"), &h("01000000 40866666")).is_err());
    }

    /// Fuzz finding (tests/fuzz, schema_columns): a 2-byte qualifier `FF20` was accepted and,
    /// compacted with another point, made a column that no longer decodes.
    #[test]
    fn second_qualifier_past_the_hour_is_refused() {
        assert_eq!(
            decode_single(&h("FF20"), &h("2A")),
            Err(SchemaError::BadQualifier("FF20".into(), 4082))
        );
        assert!(decode_single(&h("E0F0"), &h("2A")).is_ok());
    }

    #[test]
    fn append_examples() {
        let mut out = vec![];
        decode_append(&h("F0002000 2A 0020 18"), &mut out).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].timestamp_ms(1356998400), 1356998400128);
        assert_eq!(out[1].timestamp_ms(1356998400), 1356998402000);
        assert_eq!(out[1].value().unwrap(), DataValue::Int(24));
    }

    #[test]
    fn column_kinds() {
        assert_eq!(column_kind(&h("0000")), ColumnKind::Single);
        assert_eq!(column_kind(&h("F0000000")), ColumnKind::Single);
        assert_eq!(column_kind(&h("00000010")), ColumnKind::Compacted);
        assert_eq!(column_kind(&h("010000")), ColumnKind::Annotation);
        assert_eq!(column_kind(&APPEND_QUALIFIER), ColumnKind::Append);
    }
}
