//! A lossless codec for OpenTSDB's compacted columns inside the embedded store.
//!
//! A compacted column (one per series and hour) holds two bytes of qualifier (four for a
//! millisecond point) and up to eight of value a point, about ten bytes a point, of which the
//! engine's LZ4 blocks kept about five: LZ4 finds repeats, not small differences. This codec
//! stores the same column as the delta of delta of its points' offsets and the deltas of its
//! values (decimal floats as scaled integers, other floats XORed with the previous one, as
//! Gorilla does), bit-packed; it gives back the exact bytes it was given. What it cannot
//! encode, or not smaller, the store keeps as it was.
//!
//! Layout, after the cell's 8-byte timestamp, in place of a cut cell's 4-byte qualifier length
//! (see `stored` in the embedded store):
//!
//! ```text
//! MARKER  kind  varint(n)  [widths bitmap]  flags  [scale]  varint(tail len) tail
//! varint(t0) [varint(zz(d1))] [varint(zz(m0))]  bit stream
//! ```
//!
//! `kind` tells the qualifier widths (all 2-byte, all 4-byte, mixed with a bitmap), whether
//! every point has the same 4 flag bits (one byte, else a nibble a point) and the value mode.
//! A point's time is its qualifier shifted right by 4 (the flags are the low 4 bits); `tail` is
//! whatever follows the points' values (a compacted column's meta byte). The bit stream holds,
//! least significant bit first: the zig-zagged deltas of delta of the times from the third
//! point on, then in decimal mode the zig-zagged deltas of the scaled values from the second
//! point on, or in XOR mode each float's Gorilla code (4-byte floats against the previous
//! 4-byte one, others against the previous other) and then every integer point's zig-zagged
//! delta (from 0). Integer sequences are packed in blocks of [`BLOCK`] (see [`put_packed`]).

use tsgate_schema::DataValue;

/// Where a cut cell holds its qualifier's length (4 bytes, big-endian), an encoded one starts
/// with this byte: no qualifier is 4 GiB long.
pub const MARKER: u8 = 0xFF;

const BLOCK: usize = 32;
const WIDTHS_2: u8 = 0;
const WIDTHS_4: u8 = 1;
const WIDTHS_MIXED: u8 = 2;
const WIDTHS_MASK: u8 = 3;
const FLAGS_UNIFORM: u8 = 4;
const MODE_DECIMAL: u8 = 0;
const MODE_XOR: u8 = 8;
const MODE_MASK: u8 = 8;
/// Bits a later layout may use: a cell with any of them set is not this layout's.
const UNKNOWN_BITS: u8 = !(WIDTHS_MASK | FLAGS_UNIFORM | MODE_MASK);

const FLAG_FLOAT: u8 = 0x8;
const LENGTH_MASK: u8 = 0x7;

/// Powers of ten exactly representable as f64 (up to 10^22), and as f32 (up to 10^10).
const POW10: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];
const MAX_SCALE_F32: usize = 10;
/// Past 2^53 (f64) and 2^24 (f32) not every integer is a float: a scaled value must be below.
const EXACT_F64: f64 = (1u64 << 53) as f64;
const EXACT_F32: f64 = (1u64 << 24) as f64;

/// How a point's value bytes read, from its flags.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// A signed big-endian integer of this many bytes.
    Int(usize),
    F32,
    F64,
    /// A float flag with a length other than 4 or 8: kept as its bits.
    Odd(usize),
}

fn kind(flags: u8) -> Kind {
    let len = (flags & LENGTH_MASK) as usize + 1;
    match (flags & FLAG_FLOAT != 0, len) {
        (false, n) => Kind::Int(n),
        (true, 4) => Kind::F32,
        (true, 8) => Kind::F64,
        (true, n) => Kind::Odd(n),
    }
}

fn len_of(k: Kind) -> usize {
    match k {
        Kind::Int(n) | Kind::Odd(n) => n,
        Kind::F32 => 4,
        Kind::F64 => 8,
    }
}

/// A value's bytes as an unsigned number (big-endian, zero-extended).
fn bits_of(v: &[u8]) -> u64 {
    v.iter().fold(0u64, |a, &b| (a << 8) | b as u64)
}

/// An integer value's bytes, sign-extended.
fn int_of(v: &[u8]) -> i64 {
    let n = v.len() as u32;
    ((bits_of(v) << (64 - 8 * n)) as i64) >> (64 - 8 * n)
}

fn put_low(x: u64, len: usize, out: &mut Vec<u8>) {
    out.extend_from_slice(&x.to_be_bytes()[8 - len..]);
}

fn zz(x: i64) -> u64 {
    ((x << 1) ^ (x >> 63)) as u64
}

fn unzz(x: u64) -> i64 {
    ((x >> 1) as i64) ^ -((x & 1) as i64)
}

fn put_varint(mut x: u64, out: &mut Vec<u8>) {
    while x >= 0x80 {
        out.push(x as u8 | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

fn varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut x = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        x |= ((byte & 0x7F) as u64) << shift;
        if byte < 0x80 {
            return Some(x);
        }
    }
    None
}

/// Bits, least significant first.
#[derive(Default)]
struct BitWriter {
    out: Vec<u8>,
    /// Bits not yet written out: fewer than 8 between calls.
    acc: u128,
    n: u32,
}

impl BitWriter {
    /// The low `bits` (at most 64) bits of `x`.
    fn put(&mut self, x: u64, bits: u32) {
        let x = if bits >= 64 {
            x
        } else {
            x & ((1u64 << bits) - 1)
        };
        self.acc |= (x as u128) << self.n;
        self.n += bits;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    fn finish(mut self) -> Vec<u8> {
        if self.n > 0 {
            self.out.push(self.acc as u8);
        }
        self.out
    }
}

/// Reads bits as [`BitWriter`] wrote them. Two of them: the one reads use, and its slow twin
/// (bit by bit) that the tests hold it to.
trait BitSource {
    /// The next `bits` (at most 64) bits; None past the end.
    fn get(&mut self, bits: u32) -> Option<u64>;

    /// The next `n` numbers of `bits` bits each, to `each`; None past the end (when some
    /// may have been given).
    #[inline]
    fn get_many(&mut self, bits: u32, n: usize, each: &mut impl FnMut(u64)) -> Option<()> {
        for _ in 0..n {
            each(self.get(bits)?);
        }
        Some(())
    }
}

struct FastBits<'a> {
    b: &'a [u8],
    /// Position in bits.
    pos: usize,
}

impl FastBits<'_> {
    /// Up to 57 bits from `pos`, with whole 8-byte loads while they fit.
    fn get57(&mut self, bits: u32) -> Option<u64> {
        let end = self.pos + bits as usize;
        if end > self.b.len() * 8 {
            return None;
        }
        let byte = self.pos / 8;
        let word = match self.b.get(byte..byte + 8) {
            Some(w) => u64::from_le_bytes(w.try_into().expect("8 bytes")),
            None => {
                let mut w = [0u8; 8];
                w[..self.b.len() - byte].copy_from_slice(&self.b[byte..]);
                u64::from_le_bytes(w)
            }
        };
        let x = (word >> (self.pos % 8)) & ((1u64 << bits) - 1);
        self.pos = end;
        Some(x)
    }
}

impl BitSource for FastBits<'_> {
    #[inline]
    fn get(&mut self, bits: u32) -> Option<u64> {
        if bits <= 57 {
            return self.get57(bits);
        }
        let lo = self.get57(32)?;
        let hi = self.get57(bits - 32)?;
        Some(lo | (hi << 32))
    }

    /// A block at once: while every number's 8-byte load lies inside the stream (all but the
    /// stream's last few bytes), one load, shift and mask a number, with no end check each.
    #[inline]
    fn get_many(&mut self, bits: u32, n: usize, each: &mut impl FnMut(u64)) -> Option<()> {
        let end = self.pos + bits as usize * n;
        if bits > 57 || end + 64 > self.b.len() * 8 {
            for _ in 0..n {
                each(self.get(bits)?);
            }
            return Some(());
        }
        let mask = (1u64 << bits) - 1;
        let mut pos = self.pos;
        for _ in 0..n {
            let at = pos / 8;
            let word = u64::from_le_bytes(self.b[at..at + 8].try_into().expect("8 bytes"));
            each((word >> (pos % 8)) & mask);
            pos += bits as usize;
        }
        self.pos = end;
        Some(())
    }
}

#[cfg(test)]
struct SlowBits<'a> {
    b: &'a [u8],
    pos: usize,
}

#[cfg(test)]
impl BitSource for SlowBits<'_> {
    fn get(&mut self, bits: u32) -> Option<u64> {
        let mut x = 0u64;
        for i in 0..bits {
            let byte = *self.b.get(self.pos / 8)?;
            x |= (((byte >> (self.pos % 8)) & 1) as u64) << i;
            self.pos += 1;
        }
        Some(x)
    }
}

fn width(x: u64) -> u32 {
    64 - x.leading_zeros()
}

/// Unsigned numbers in blocks of [`BLOCK`]. Each block is led by one bit: 0, then its widest
/// member's width (7 bits) and every member on that width; or 1, then each member on its own,
/// a 0 bit for a zero, else a 1 bit, its width less one (6 bits) and its bits. The second
/// keeps a lone outlier (a gap in a series' clock, a jump in its values) from widening the
/// whole block; the encoder takes the shorter.
fn put_packed(xs: &[u64], w: &mut BitWriter) {
    for block in xs.chunks(BLOCK) {
        let bits = block.iter().map(|&x| width(x)).max().unwrap_or(0);
        let fixed = 7 + block.len() as u32 * bits;
        let each: u32 = block
            .iter()
            .map(|&x| if x == 0 { 1 } else { 7 + width(x) })
            .sum();
        if fixed <= each {
            w.put(0, 1);
            w.put(bits as u64, 7);
            for &x in block {
                w.put(x, bits);
            }
        } else {
            w.put(1, 1);
            for &x in block {
                if x == 0 {
                    w.put(0, 1);
                } else {
                    w.put(1, 1);
                    w.put((width(x) - 1) as u64, 6);
                    w.put(x, width(x));
                }
            }
        }
    }
}

fn get_packed(n: usize, r: &mut impl BitSource, mut each: impl FnMut(u64)) -> Option<()> {
    let mut left = n;
    while left > 0 {
        let take = left.min(BLOCK);
        if r.get(1)? == 0 {
            let bits = r.get(7)? as u32;
            if bits > 64 {
                return None;
            }
            r.get_many(bits, take, &mut each)?;
        } else {
            for _ in 0..take {
                if r.get(1)? == 0 {
                    each(0);
                } else {
                    let bits = r.get(6)? as u32 + 1;
                    each(r.get(bits)?);
                }
            }
        }
        left -= take;
    }
    Some(())
}

/// Gorilla's XOR code of one float against the previous (bits, leading zeros, trailing zeros
/// of the last window written).
struct Xor {
    prev: u64,
    window: Option<(u32, u32)>,
}

impl Xor {
    fn new() -> Xor {
        Xor {
            prev: 0,
            window: None,
        }
    }

    fn put(&mut self, bits: u64, w: &mut BitWriter) {
        let x = bits ^ self.prev;
        self.prev = bits;
        if x == 0 {
            w.put(0, 1);
            return;
        }
        let (lead, trail) = (x.leading_zeros().min(63), x.trailing_zeros());
        match self.window {
            Some((l, t)) if lead >= l && trail >= t => {
                // '1' then '0': the meaningful bits fit the previous window.
                w.put(0b01, 2);
                w.put(x >> t, 64 - l - t);
            }
            _ => {
                w.put(0b11, 2);
                let sig = 64 - lead - trail;
                w.put(lead as u64, 6);
                w.put((sig - 1) as u64, 6);
                w.put(x >> trail, sig);
                self.window = Some((lead, trail));
            }
        }
    }

    fn get(&mut self, r: &mut impl BitSource) -> Option<u64> {
        if r.get(1)? == 0 {
            return Some(self.prev);
        }
        let (l, t) = if r.get(1)? == 0 {
            self.window?
        } else {
            let lead = r.get(6)? as u32;
            let sig = r.get(6)? as u32 + 1;
            if lead + sig > 64 {
                return None;
            }
            let w = (lead, 64 - lead - sig);
            self.window = Some(w);
            w
        };
        let x = r.get(64 - l - t)? << t;
        self.prev ^= x;
        Some(self.prev)
    }
}

/// The smallest scale `k` at which `v` is `m / 10^k` for an integer `m` (and that `m`), the
/// division giving back `v`'s exact bits.
fn decimal_f64(v: f64, from: usize) -> Option<(usize, i64)> {
    (from..POW10.len()).find_map(|k| scaled_f64(v, k).map(|m| (k, m)))
}

/// The integer `m` whose `m / 10^k` (as [`decode`] computes it) is `v`, bit for bit.
fn scaled_f64(v: f64, k: usize) -> Option<i64> {
    let m = (v * POW10[k]).round();
    // NaN and infinities are no decimals either.
    if !m.is_finite() || m.abs() >= EXACT_F64 {
        return None;
    }
    // Checked on the integer: -0.0 rounds to a zero that comes back as +0.0.
    let m = m as i64;
    ((m as f64 / POW10[k]).to_bits() == v.to_bits()).then_some(m)
}

fn decimal_f32(v: f32, from: usize) -> Option<(usize, i64)> {
    (from..=MAX_SCALE_F32).find_map(|k| scaled_f32(v, k).map(|m| (k, m)))
}

fn scaled_f32(v: f32, k: usize) -> Option<i64> {
    if k > MAX_SCALE_F32 {
        return None;
    }
    let m = (v as f64 * POW10[k]).round();
    if !m.is_finite() || m.abs() >= EXACT_F32 {
        return None;
    }
    let m = m as i64;
    ((m as f32 / POW10[k] as f32).to_bits() == v.to_bits()).then_some(m)
}

/// The points of a column: each one's qualifier entry and value bytes. None if the qualifier
/// is not a run of OpenTSDB point qualifiers or the value is too short for them.
fn points(q: &[u8], v: &[u8]) -> Option<(Vec<(u32, bool)>, usize)> {
    let mut pts = Vec::with_capacity(q.len() / 2);
    let (mut qi, mut vi) = (0, 0);
    while qi < q.len() {
        let ms = q[qi] & 0xF0 == 0xF0;
        let e = if ms {
            u32::from_be_bytes(q.get(qi..qi + 4)?.try_into().ok()?)
        } else {
            u16::from_be_bytes(q.get(qi..qi + 2)?.try_into().ok()?) as u32
        };
        qi += if ms { 4 } else { 2 };
        vi += len_of(kind(e as u8 & 0xF));
        pts.push((e, ms));
    }
    (vi <= v.len()).then_some((pts, vi))
}

/// Encodes column (`q`, `v`) after `out`'s bytes if it is a run of OpenTSDB points and the
/// encoding is smaller than the qualifier and value with a 4-byte length; otherwise leaves
/// `out` as it was and returns false.
pub fn encode(q: &[u8], v: &[u8], out: &mut Vec<u8>) -> bool {
    let start = out.len();
    if try_encode(q, v, out).is_some() && out.len() - start < 4 + q.len() + v.len() {
        // Held to its word: a column that would not come back exactly stays as it is.
        let (mut dq, mut dv) = (Vec::new(), Vec::new());
        if decode(&out[start..], &mut dq, &mut dv).is_some() && dq == q && dv == v {
            return true;
        }
    }
    out.truncate(start);
    false
}

fn try_encode(q: &[u8], v: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let (pts, used) = points(q, v)?;
    let n = pts.len();
    if n < 2 {
        return None;
    }
    let all_ms = pts.iter().all(|p| p.1);
    let widths = if all_ms {
        WIDTHS_4
    } else if pts.iter().any(|p| p.1) {
        WIDTHS_MIXED
    } else {
        WIDTHS_2
    };
    let flags0 = pts[0].0 as u8 & 0xF;
    let uniform = pts.iter().all(|p| p.0 as u8 & 0xF == flags0);
    // Values: decimal if every float is a decimal at one scale.
    let mut at = 0;
    let vals: Vec<(Kind, &[u8])> = pts
        .iter()
        .map(|&(e, _)| {
            let k = kind(e as u8 & 0xF);
            let s = &v[at..at + len_of(k)];
            at += len_of(k);
            (k, s)
        })
        .collect();
    let decimal = decimal_values(&vals);
    let mode = if decimal.is_some() {
        MODE_DECIMAL
    } else {
        MODE_XOR
    };
    out.push(MARKER);
    out.push(widths | if uniform { FLAGS_UNIFORM } else { 0 } | mode);
    put_varint(n as u64, out);
    if widths == WIDTHS_MIXED {
        let mut map = vec![0u8; n.div_ceil(8)];
        for (i, p) in pts.iter().enumerate() {
            map[i / 8] |= (p.1 as u8) << (i % 8);
        }
        out.extend_from_slice(&map);
    }
    if uniform {
        out.push(flags0);
    } else {
        for pair in pts.chunks(2) {
            let hi = pair.get(1).map_or(0, |p| p.0 as u8 & 0xF);
            out.push((pair[0].0 as u8 & 0xF) | (hi << 4));
        }
    }
    if let Some((scale, _)) = &decimal {
        out.push(*scale as u8);
    }
    put_varint((v.len() - used) as u64, out);
    out.extend_from_slice(&v[used..]);
    let t: Vec<i64> = pts.iter().map(|p| (p.0 >> 4) as i64).collect();
    put_varint(t[0] as u64, out);
    let d1 = t[1].wrapping_sub(t[0]);
    put_varint(zz(d1), out);
    let mut w = BitWriter::default();
    let dods: Vec<u64> = t
        .windows(3)
        .map(|x| {
            zz(x[2]
                .wrapping_sub(x[1])
                .wrapping_sub(x[1].wrapping_sub(x[0])))
        })
        .collect();
    put_packed(&dods, &mut w);
    match decimal {
        Some((_, ms)) => {
            put_varint(zz(ms[0]), out);
            let deltas: Vec<u64> = ms.windows(2).map(|x| zz(x[1].wrapping_sub(x[0]))).collect();
            put_packed(&deltas, &mut w);
        }
        None => {
            let (mut xor, mut xor32) = (Xor::new(), Xor::new());
            let mut ints = Vec::new();
            let mut prev = 0i64;
            for &(k, s) in &vals {
                match k {
                    Kind::Int(_) => {
                        let i = int_of(s);
                        ints.push(zz(i.wrapping_sub(prev)));
                        prev = i;
                    }
                    Kind::F32 => xor32.put(bits_of(s), &mut w),
                    _ => xor.put(bits_of(s), &mut w),
                }
            }
            put_packed(&ints, &mut w);
        }
    }
    out.extend_from_slice(&w.finish());
    Some(())
}

/// Every value as an integer at one scale (integers as they are), if every float is a decimal
/// with at most that many places.
fn decimal_values(vals: &[(Kind, &[u8])]) -> Option<(usize, Vec<i64>)> {
    let mut scale = 0;
    for &(k, s) in vals {
        scale = match k {
            Kind::Int(_) => scale,
            Kind::F64 => decimal_f64(f64::from_bits(bits_of(s)), scale)?.0,
            Kind::F32 => decimal_f32(f32::from_bits(bits_of(s) as u32), scale)?.0,
            Kind::Odd(_) => return None,
        };
    }
    // A float exact at its own scale is exact at a larger one (the same number, divided
    // exactly once more), but that is checked, not assumed.
    let ms = vals
        .iter()
        .map(|&(k, s)| match k {
            Kind::Int(_) => Some(int_of(s)),
            Kind::F64 => scaled_f64(f64::from_bits(bits_of(s)), scale),
            Kind::F32 => scaled_f32(f32::from_bits(bits_of(s) as u32), scale),
            Kind::Odd(_) => None,
        })
        .collect::<Option<Vec<i64>>>()?;
    Some((scale, ms))
}

/// Decodes what [`encode`] wrote (from its marker on) into the column's qualifier and value.
/// None if `b` is not such an encoding.
pub fn decode(b: &[u8], q: &mut Vec<u8>, v: &mut Vec<u8>) -> Option<()> {
    decode_with(b, q, v, |rest| FastBits { b: rest, pos: 0 })
}

/// An encoding's header, what [`decode`] and [`decode_points`] read before the bit stream.
struct Header<'a> {
    n: usize,
    /// Per point, whether its qualifier is 4 bytes (milliseconds).
    ms_map: Option<&'a [u8]>,
    all_ms: bool,
    /// Per point, its flags (one for all when uniform).
    flags: Flags<'a>,
    scale: usize,
    tail: &'a [u8],
    t0: i64,
    d1: i64,
    /// The first scaled value, in decimal mode.
    m0: Option<i64>,
    /// Where the bit stream starts.
    at: usize,
}

enum Flags<'a> {
    Uniform(u8),
    /// A nibble a point, the first in the low half.
    Packed(&'a [u8]),
}

impl Header<'_> {
    #[inline]
    fn is_ms(&self, i: usize) -> bool {
        match self.ms_map {
            Some(m) => m[i / 8] >> (i % 8) & 1 == 1,
            None => self.all_ms,
        }
    }

    #[inline]
    fn flags(&self, i: usize) -> u8 {
        match self.flags {
            Flags::Uniform(f) => f,
            Flags::Packed(p) => (p[i / 2] >> (4 * (i % 2))) & 0xF,
        }
    }
}

fn header(b: &[u8]) -> Option<Header<'_>> {
    if b.first() != Some(&MARKER) {
        return None;
    }
    let kind_byte = *b.get(1)?;
    if kind_byte & UNKNOWN_BITS != 0 {
        return None;
    }
    let mut at = 2;
    let n = varint(b, &mut at)? as usize;
    // Each point takes at least a bit of the stream or a byte of the header: a count past
    // that is no encoding (and must not size an allocation).
    if n < 2 || n > b.len() * 8 {
        return None;
    }
    let widths = kind_byte & WIDTHS_MASK;
    let ms_map = match widths {
        WIDTHS_MIXED => {
            let m = b.get(at..at + n.div_ceil(8))?;
            at += m.len();
            Some(m)
        }
        WIDTHS_2 | WIDTHS_4 => None,
        _ => return None,
    };
    let flags = if kind_byte & FLAGS_UNIFORM != 0 {
        let f = *b.get(at)?;
        at += 1;
        if f > 0xF {
            return None;
        }
        Flags::Uniform(f)
    } else {
        let packed = b.get(at..at + n.div_ceil(2))?;
        at += packed.len();
        Flags::Packed(packed)
    };
    let decimal = kind_byte & MODE_MASK == MODE_DECIMAL;
    let scale = if decimal {
        let s = *b.get(at)? as usize;
        at += 1;
        if s >= POW10.len() {
            return None;
        }
        s
    } else {
        0
    };
    let tail_len = varint(b, &mut at)? as usize;
    let tail = b.get(at..at.checked_add(tail_len)?)?;
    at += tail_len;
    let t0 = varint(b, &mut at)? as i64;
    let d1 = unzz(varint(b, &mut at)?);
    let m0 = if decimal {
        Some(unzz(varint(b, &mut at)?))
    } else {
        None
    };
    Some(Header {
        n,
        ms_map,
        all_ms: widths == WIDTHS_4,
        flags,
        scale,
        tail,
        t0,
        d1,
        m0,
        at,
    })
}

/// The points' times (qualifier entries shifted right by 4): the first two from the header,
/// the rest from the stream's deltas of delta, each to `each` (index, time).
fn get_times(h: &Header, r: &mut impl BitSource, mut each: impl FnMut(usize, i64)) -> Option<()> {
    each(0, h.t0);
    let mut t = h.t0.wrapping_add(h.d1);
    each(1, t);
    let mut d = h.d1;
    let mut i = 2;
    get_packed(h.n - 2, r, |x| {
        d = d.wrapping_add(unzz(x));
        t = t.wrapping_add(d);
        each(i, t);
        i += 1;
    })
}

fn decode_with<'a, R: BitSource>(
    b: &'a [u8],
    q: &mut Vec<u8>,
    v: &mut Vec<u8>,
    reader: impl FnOnce(&'a [u8]) -> R,
) -> Option<()> {
    q.clear();
    v.clear();
    let h = header(b)?;
    let n = h.n;
    let mut r = reader(&b[h.at..]);
    // Qualifiers.
    q.reserve(n * 4);
    let mut bad = false;
    get_times(&h, &mut r, |i, t| {
        let e = ((t as u64) << 4) | h.flags(i) as u64;
        if h.is_ms(i) {
            match u32::try_from(e) {
                Ok(e) => q.extend_from_slice(&e.to_be_bytes()),
                Err(_) => bad = true,
            }
        } else {
            match u16::try_from(e) {
                Ok(e) => q.extend_from_slice(&e.to_be_bytes()),
                Err(_) => bad = true,
            }
        }
    })?;
    if bad {
        return None;
    }
    // Values.
    let kinds: Vec<Kind> = (0..n).map(|i| kind(h.flags(i))).collect();
    v.reserve(kinds.iter().map(|&k| len_of(k)).sum::<usize>() + h.tail.len());
    match h.m0 {
        Some(m0) => {
            let mut m = m0;
            put_decimal(kinds[0], m, h.scale, v)?;
            let mut i = 1;
            get_packed(n - 1, &mut r, |x| {
                m = m.wrapping_add(unzz(x));
                bad |= put_decimal(kinds[i], m, h.scale, v).is_none();
                i += 1;
            })?;
            if bad {
                return None;
            }
        }
        None => {
            let (mut xor, mut xor32) = (Xor::new(), Xor::new());
            let mut floats = Vec::with_capacity(n);
            for &k in &kinds {
                match k {
                    Kind::Int(_) => {}
                    Kind::F32 => floats.push(xor32.get(&mut r)?),
                    _ => floats.push(xor.get(&mut r)?),
                }
            }
            let n_ints = n - floats.len();
            let mut ints = Vec::with_capacity(n_ints);
            let mut prev = 0i64;
            get_packed(n_ints, &mut r, |x| {
                prev = prev.wrapping_add(unzz(x));
                ints.push(prev);
            })?;
            let (mut fi, mut ii) = (floats.into_iter(), ints.into_iter());
            for &k in &kinds {
                match k {
                    Kind::Int(len) => put_low(ii.next()? as u64, len, v),
                    k => put_low(fi.next()?, len_of(k), v),
                }
            }
        }
    }
    v.extend_from_slice(h.tail);
    Some(())
}

/// A column's points as schema's `walk_compacted` reads the column [`decode`] gives back,
/// (offset ms, value) in stored order, without making its bytes: onto `out`, if that walk
/// would take the whole column and its offsets rise strictly (what a read's ordered lane
/// takes); otherwise None, with `out` as it was, and the column is to be read from its bytes.
/// The slow twin it is held to: [`decode`], then `walk_compacted`.
pub fn decode_points(b: &[u8], out: &mut Vec<(u32, DataValue)>) -> Option<()> {
    let mark = out.len();
    let done = points_into(b, out, |b| FastBits { b, pos: 0 });
    if done.is_none() {
        out.truncate(mark);
    }
    done
}

fn points_into<'a, R: BitSource>(
    b: &'a [u8],
    out: &mut Vec<(u32, DataValue)>,
    reader: impl FnOnce(&'a [u8]) -> R,
) -> Option<()> {
    let h = header(b)?;
    // The walk wants the values followed by exactly the meta byte of a compacted column.
    if !matches!(h.tail, [0] | [1]) {
        return None;
    }
    let n = h.n;
    let mark = out.len();
    let mut r = reader(&b[h.at..]);
    out.reserve(n);
    // Offsets, read back as the walk reads the qualifier bytes: a 2-byte one starting with
    // nibble F would read as a 4-byte one, and a 4-byte one without it as a 2-byte one.
    let mut bad = false;
    let mut last: Option<u32> = None;
    get_times(&h, &mut r, |i, t| {
        let e = ((t as u64) << 4) | h.flags(i) as u64;
        let off = if h.is_ms(i) {
            match u32::try_from(e) {
                Ok(e) if e >= 0xF000_0000 => (e & 0x0FFF_FFC0) >> 6,
                _ => {
                    bad = true;
                    0
                }
            }
        } else {
            match u16::try_from(e) {
                Ok(e) if e < 0xF000 => (e >> 4) as u32 * 1000,
                _ => {
                    bad = true;
                    0
                }
            }
        };
        bad |= last.is_some_and(|l| off <= l);
        last = Some(off);
        // The value comes below; a placeholder keeps one pass over `out`.
        out.push((off, DataValue::Int(0)));
    })?;
    if bad {
        return None;
    }
    let pts = &mut out[mark..];
    match (h.m0, &h.flags) {
        // The commonest column, values of one kind: one division (or none) a point.
        (Some(m0), Flags::Uniform(f)) => {
            let scale = h.scale;
            match kind(*f) {
                Kind::F64 => {
                    let p = POW10[scale];
                    scaled_into(pts, m0, &mut r, |m| DataValue::F64(m as f64 / p))?;
                }
                Kind::F32 if scale <= MAX_SCALE_F32 => {
                    let p = POW10[scale] as f32;
                    scaled_into(pts, m0, &mut r, |m| DataValue::F32(m as f32 / p))?;
                }
                Kind::Int(len) if len.is_power_of_two() => {
                    scaled_into(pts, m0, &mut r, |m| DataValue::Int(low_int(m, len)))?;
                }
                _ => return None,
            }
        }
        (Some(m0), _) => {
            let mut m = m0;
            pts[0].1 = decimal_value(kind(h.flags(0)), m, h.scale)?;
            let mut i = 1;
            get_packed(n - 1, &mut r, |x| {
                m = m.wrapping_add(unzz(x));
                match decimal_value(kind(h.flags(i)), m, h.scale) {
                    Some(v) => pts[i].1 = v,
                    None => bad = true,
                }
                i += 1;
            })?;
            if bad {
                return None;
            }
        }
        (None, _) => {
            let (mut xor, mut xor32) = (Xor::new(), Xor::new());
            let mut ints = 0;
            for (i, p) in pts.iter_mut().enumerate() {
                p.1 = match kind(h.flags(i)) {
                    Kind::Int(len) if len.is_power_of_two() => {
                        ints += 1;
                        continue;
                    }
                    Kind::F32 => DataValue::F32(f32::from_bits(xor32.get(&mut r)? as u32)),
                    Kind::F64 => DataValue::F64(f64::from_bits(xor.get(&mut r)?)),
                    // Lengths no value decoding takes: the walk stops there.
                    Kind::Int(_) | Kind::Odd(_) => return None,
                };
            }
            let mut prev = 0i64;
            let mut at = 0;
            get_packed(ints, &mut r, |x| {
                prev = prev.wrapping_add(unzz(x));
                while let Kind::F32 | Kind::F64 = kind(h.flags(at)) {
                    at += 1;
                }
                let Kind::Int(len) = kind(h.flags(at)) else {
                    unreachable!("only ints are left")
                };
                pts[at].1 = DataValue::Int(low_int(prev, len));
                at += 1;
            })?;
        }
    }
    Some(())
}

/// Decimal mode's values of one kind onto `pts`, each `value` of its scaled integer.
#[inline]
fn scaled_into(
    pts: &mut [(u32, DataValue)],
    m0: i64,
    r: &mut impl BitSource,
    value: impl Fn(i64) -> DataValue,
) -> Option<()> {
    let mut m = m0;
    pts[0].1 = value(m);
    let mut i = 1;
    get_packed(pts.len() - 1, r, |x| {
        m = m.wrapping_add(unzz(x));
        pts[i].1 = value(m);
        i += 1;
    })
}

/// `m` as its low `len` bytes read back as a signed integer: what the bytes of an integer
/// point hold of it.
#[inline]
fn low_int(m: i64, len: usize) -> i64 {
    let shift = 64 - 8 * len as u32;
    (m << shift) >> shift
}

/// What [`put_decimal`]'s bytes read back as: None where it writes none, or writes bytes no
/// value decoding takes (an integer of 3, 5, 6 or 7 bytes).
#[inline]
fn decimal_value(k: Kind, m: i64, scale: usize) -> Option<DataValue> {
    Some(match k {
        Kind::Int(len) if len.is_power_of_two() => DataValue::Int(low_int(m, len)),
        Kind::F64 => DataValue::F64(m as f64 / POW10[scale]),
        Kind::F32 if scale <= MAX_SCALE_F32 => DataValue::F32(m as f32 / POW10[scale] as f32),
        _ => return None,
    })
}

fn put_decimal(k: Kind, m: i64, scale: usize, v: &mut Vec<u8>) -> Option<()> {
    match k {
        Kind::Int(len) => put_low(m as u64, len, v),
        Kind::F64 => v.extend_from_slice(&(m as f64 / POW10[scale]).to_be_bytes()),
        Kind::F32 if scale <= MAX_SCALE_F32 => {
            v.extend_from_slice(&(m as f32 / POW10[scale] as f32).to_be_bytes())
        }
        _ => return None,
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use tsgate_schema::column::{build_column, walk_compacted, RawPoint};

    /// A value as its kind and bits: NaN equals itself.
    fn bits(v: DataValue) -> (u8, u64) {
        match v {
            DataValue::Int(i) => (0, i as u64),
            DataValue::F32(f) => (1, f.to_bits() as u64),
            DataValue::F64(f) => (2, f.to_bits()),
        }
    }

    /// What [`decode_points`] is held to: schema's walk of the column's bytes, if it takes the
    /// whole column with offsets strictly rising.
    fn walked(q: &[u8], v: &[u8]) -> Option<Vec<(u32, (u8, u64))>> {
        let mut pts: Vec<(u32, (u8, u64))> = Vec::new();
        walk_compacted(q, v, |off, val| {
            let rising = pts.last().is_none_or(|p| off > p.0);
            pts.push((off, bits(val)));
            rising
        })
        .then_some(pts)
    }

    /// [`decode_points`] with either bit reader, as comparable values (`out` keeps what it
    /// held: a failed decode leaves it so).
    fn points_of(body: &[u8], slow: bool) -> Option<Vec<(u32, (u8, u64))>> {
        let mut out = vec![(7, DataValue::Int(7))];
        let r = if slow {
            let r = points_into(body, &mut out, |b| SlowBits { b, pos: 0 });
            if r.is_none() {
                out.truncate(1);
            }
            r
        } else {
            decode_points(body, &mut out)
        };
        assert_eq!(out[0], (7, DataValue::Int(7)));
        if r.is_none() {
            assert_eq!(
                out.len(),
                1,
                "a refused column leaves the points as they were"
            );
        }
        r.map(|()| out[1..].iter().map(|&(o, v)| (o, bits(v))).collect())
    }

    /// Encodes, then decodes with both bit readers: what comes back is the column given, and
    /// the fast reader agrees with its slow twin; the points decoded without the bytes are
    /// what schema's walk reads of the bytes.
    fn round_trip(q: &[u8], v: &[u8]) -> Option<usize> {
        let mut enc = vec![1, 2, 3];
        if !encode(q, v, &mut enc) {
            assert_eq!(
                enc,
                [1, 2, 3],
                "a refused column leaves the buffer as it was"
            );
            return None;
        }
        let body = &enc[3..];
        assert!(body.len() < 4 + q.len() + v.len());
        let (mut fq, mut fv, mut sq, mut sv) = (vec![9], vec![9], Vec::new(), Vec::new());
        decode(body, &mut fq, &mut fv).expect("decodes");
        decode_with(body, &mut sq, &mut sv, |b| SlowBits { b, pos: 0 }).expect("decodes");
        assert_eq!((&fq[..], &fv[..]), (q, v));
        assert_eq!((fq, fv), (sq, sv));
        let points = points_of(body, false);
        assert_eq!(points, walked(q, v));
        assert_eq!(points, points_of(body, true));
        Some(body.len())
    }

    const BASE: u32 = 1_700_000_000 / 3600 * 3600;

    fn column(points: &[(u64, DataValue)]) -> (Vec<u8>, Vec<u8>) {
        let pts: Vec<RawPoint> = points
            .iter()
            .map(|&(ts, v)| RawPoint::encode(ts, BASE, v).unwrap())
            .collect();
        build_column(&pts)
    }

    /// The bench set's shape: an hour at 10 s of a random walk rounded to 2 decimals.
    #[test]
    fn a_decimal_walk_takes_little_over_a_byte_a_point() {
        let mut x = 50.0f64;
        let mut seed = 7u64;
        let pts: Vec<(u64, DataValue)> = (0..360u64)
            .map(|i| {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                x = (x + (seed >> 33) as f64 / (1u64 << 31) as f64 * 4.0 - 2.0).clamp(0.0, 100.0);
                let v = (x * 100.0).round() / 100.0;
                (BASE as u64 + i * 10, DataValue::F64(v))
            })
            .collect();
        let (q, v) = column(&pts);
        assert_eq!(q.len() + v.len(), 360 * 10 + 1);
        let n = round_trip(&q, &v).expect("encoded");
        assert!(n < 360 * 5 / 4, "{n} bytes");
        // Integers (a counter) and whole floats too; an irregular clock costs more, not fails.
        let ints: Vec<_> = (0..360u64)
            .map(|i| {
                (
                    BASE as u64 + i * 10 + i % 3,
                    DataValue::Int(1_000_000 + 7 * i as i64),
                )
            })
            .collect();
        let (q, v) = column(&ints);
        assert!(round_trip(&q, &v).expect("encoded") < 360);
    }

    /// Floats that are no short decimals (and the odd non-finite one) go through XOR coding.
    #[test]
    fn other_floats_and_mixed_columns_round_trip() {
        let pts: Vec<_> = (0..100u64)
            .map(|i| (BASE as u64 + i, DataValue::F64((i as f64).sqrt())))
            .collect();
        let (q, v) = column(&pts);
        round_trip(&q, &v).expect("encoded");
        // Seconds, then milliseconds, ints and floats of both widths, in one column.
        let mut pts = Vec::new();
        for i in 0..40u64 {
            let ts = if i >= 20 {
                (BASE as u64 + i) * 1000 + i
            } else {
                BASE as u64 + i
            };
            let v = match i % 4 {
                0 => DataValue::Int(i as i64 * 1000 - 7),
                1 => DataValue::F32(i as f32 / 4.0),
                2 => DataValue::F64(1.0 / (i as f64 + 1.0)),
                _ => DataValue::Int(-(i as i64)),
            };
            pts.push((ts, v));
        }
        let (q, v) = column(&pts);
        round_trip(&q, &v).expect("encoded");
        // -0.0 is no decimal (0 / 100 is +0.0): still exact.
        let pts: Vec<_> = (0..50u64)
            .map(|i| {
                (
                    BASE as u64 + i,
                    DataValue::F64(if i == 9 { -0.0 } else { 1.25 }),
                )
            })
            .collect();
        let (q, v) = column(&pts);
        round_trip(&q, &v).expect("encoded");
    }

    fn entry() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            (0u16..0xF000).prop_map(|e| e.to_be_bytes().to_vec()),
            (0xF000_0000u32..=u32::MAX).prop_map(|e| e.to_be_bytes().to_vec()),
        ]
    }

    /// Value bytes for a qualifier: each point's length from its flags, any bytes, biased
    /// towards floats that are decimals so both value modes are reached.
    fn values_for(q: &[u8]) -> impl Strategy<Value = Vec<u8>> {
        let (pts, _) = points(q, &[0; 1 << 16]).expect("a run of entries");
        let each: Vec<_> = pts
            .into_iter()
            .map(|(e, _)| {
                let k = kind(e as u8 & 0xF);
                let len = len_of(k);
                prop_oneof![
                    proptest::collection::vec(any::<u8>(), len),
                    (-100_000i64..100_000, 0usize..4).prop_map(move |(m, s)| match k {
                        Kind::F64 => (m as f64 / POW10[s]).to_be_bytes().to_vec(),
                        Kind::F32 => (m as f32 / POW10[s] as f32).to_be_bytes().to_vec(),
                        _ => m.to_be_bytes()[8 - len..].to_vec(),
                    }),
                ]
            })
            .collect();
        each.prop_map(|vs| vs.concat())
    }

    fn any_column() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
        proptest::collection::vec(entry(), 0..60)
            .prop_map(|es| es.concat())
            .prop_flat_map(|q| {
                let tail = proptest::collection::vec(any::<u8>(), 0..3);
                (Just(q.clone()), values_for(&q), tail)
            })
            .prop_map(|(q, v, tail)| (q, [v, tail].concat()))
    }

    /// Columns as OpenTSDB compacts them (valid flags, the meta byte, offsets mostly rising,
    /// seconds and milliseconds mixed or not), which the points decoder takes.
    fn compacted_column() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
        let point = (
            0u32..3000,
            any::<bool>(),
            0usize..6,
            prop_oneof![any::<u64>(), (-100_000i64..100_000).prop_map(|m| m as u64),],
            0usize..4,
        );
        (
            proptest::collection::vec(point, 2..80),
            any::<bool>(),
            0u8..2,
        )
            .prop_map(|(pts, all_s, meta)| {
                let (mut q, mut v, mut t_ms) = (Vec::new(), Vec::new(), 0u32);
                for (step, ms, k, x, s) in pts {
                    t_ms = (t_ms + step).min(3_599_999);
                    let (flags, bytes): (u8, Vec<u8>) = match k {
                        0 => (0, vec![x as u8]),
                        1 => (1, (x as u16).to_be_bytes().to_vec()),
                        2 => (3, (x as u32).to_be_bytes().to_vec()),
                        3 => (7, x.to_be_bytes().to_vec()),
                        4 => (
                            0xB,
                            (x as i64 as f32 / POW10[s] as f32).to_be_bytes().to_vec(),
                        ),
                        _ => (0xF, (x as i64 as f64 / POW10[s]).to_be_bytes().to_vec()),
                    };
                    if ms && !all_s {
                        let e = 0xF000_0000 | (t_ms << 6) | flags as u32;
                        q.extend_from_slice(&e.to_be_bytes());
                    } else {
                        let e = ((t_ms / 1000) << 4) as u16 | flags as u16;
                        q.extend_from_slice(&e.to_be_bytes());
                    }
                    v.extend_from_slice(&bytes);
                }
                v.push(meta);
                (q, v)
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Compacted columns come back exactly, and their points without their bytes as the
        /// walk reads them (see [`round_trip`]); nearly all of them are taken.
        #[test]
        fn compacted_columns_decode_to_their_points((q, v) in compacted_column()) {
            round_trip(&q, &v);
        }

        /// Any run of point qualifiers with any value bytes comes back exactly.
        #[test]
        fn columns_round_trip((q, v) in any_column()) {
            round_trip(&q, &v);
        }

        /// Any bytes at all: encoded only if they come back exactly.
        #[test]
        fn arbitrary_bytes_round_trip(q in proptest::collection::vec(any::<u8>(), 0..80),
                                      v in proptest::collection::vec(any::<u8>(), 0..300)) {
            round_trip(&q, &v);
        }

        /// Damaged or foreign bytes are refused or decoded, never a panic, and both readers
        /// agree on them.
        #[test]
        fn any_body_decodes_alike(b in proptest::collection::vec(any::<u8>(), 0..200), kind in 0u8..16) {
            let mut b = b;
            b.splice(0..0, [MARKER, kind]);
            let (mut fq, mut fv, mut sq, mut sv) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            let fast = decode(&b, &mut fq, &mut fv);
            let slow = decode_with(&b, &mut sq, &mut sv, |b| SlowBits { b, pos: 0 });
            prop_assert_eq!(fast, slow);
            // Points are given only where the bytes decode and walk to them.
            let points = points_of(&b, false);
            prop_assert_eq!(&points, &points_of(&b, true));
            if let Some(p) = points {
                prop_assert!(fast.is_some());
                prop_assert_eq!(Some(p), walked(&fq, &fv));
            }
            if fast.is_some() {
                prop_assert_eq!((fq, fv), (sq, sv));
            }
        }

        /// The bit writer and both readers agree on any widths.
        #[test]
        fn bits_read_back(xs in proptest::collection::vec((any::<u64>(), 0u32..=64), 0..100)) {
            let mut w = BitWriter::default();
            for &(x, n) in &xs {
                w.put(x, n);
            }
            let b = w.finish();
            let (mut fast, mut slow) = (FastBits { b: &b, pos: 0 }, SlowBits { b: &b, pos: 0 });
            for &(x, n) in &xs {
                let want = if n == 64 { x } else { x & ((1u64 << n) - 1) };
                prop_assert_eq!(fast.get(n), Some(want));
                prop_assert_eq!(slow.get(n), Some(want));
            }
        }
    }
}
