//! The XOR chunk encoding of Prometheus' `chunkenc` (Gorilla-style): a 2-byte big-endian
//! sample count, then a bit stream of timestamps (varint, uvarint delta, then delta-of-delta
//! codes) and values (raw, then XOR against the previous value with a leading/trailing-zero
//! window).

/// Samples per chunk, as Prometheus cuts them.
pub const SAMPLES_PER_CHUNK: usize = 120;

#[derive(Default)]
struct BitWriter {
    bytes: Vec<u8>,
    /// Bits still free in the last byte.
    free: u8,
}

impl BitWriter {
    fn bit(&mut self, b: bool) {
        if self.free == 0 {
            self.bytes.push(0);
            self.free = 8;
        }
        if b {
            *self.bytes.last_mut().unwrap() |= 1 << (self.free - 1);
        }
        self.free -= 1;
    }
    fn bits(&mut self, v: u64, n: u8) {
        for i in (0..n).rev() {
            self.bit((v >> i) & 1 == 1);
        }
    }
    fn byte(&mut self, b: u8) {
        self.bits(b as u64, 8);
    }
}

fn varint_bytes(v: i64) -> Vec<u8> {
    let mut out = Vec::new();
    crate::frame::put_uvarint(&mut out, ((v << 1) ^ (v >> 63)) as u64);
    out
}

fn uvarint_bytes(v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    crate::frame::put_uvarint(&mut out, v);
    out
}

fn fits(x: i64, nbits: u32) -> bool {
    -((1i64 << (nbits - 1)) - 1) <= x && x <= 1i64 << (nbits - 1)
}

/// Encodes up to 65535 samples (time-ordered) into one XOR chunk's bytes.
pub fn encode_xor(samples: &[(i64, f64)]) -> Vec<u8> {
    assert!(
        samples.len() <= u16::MAX as usize,
        "too many samples for one chunk"
    );
    let mut w = BitWriter {
        bytes: vec![0, 0],
        free: 0,
    };
    let (mut t_prev, mut t_delta, mut v_prev) = (0i64, 0i64, 0u64);
    let (mut leading, mut trailing) = (0xffu8, 0u8);
    for (i, &(t, v)) in samples.iter().enumerate() {
        let vb = v.to_bits();
        match i {
            0 => {
                for b in varint_bytes(t) {
                    w.byte(b);
                }
                w.bits(vb, 64);
            }
            1 => {
                // Wrapping, as Prometheus' int64 arithmetic does: decode undoes it exactly.
                t_delta = t.wrapping_sub(t_prev);
                for b in uvarint_bytes(t_delta as u64) {
                    w.byte(b);
                }
                write_value(&mut w, vb, v_prev, &mut leading, &mut trailing);
            }
            _ => {
                let d = t.wrapping_sub(t_prev);
                let dod = d.wrapping_sub(t_delta);
                if dod == 0 {
                    w.bit(false);
                } else if fits(dod, 14) {
                    w.bits(0b10, 2);
                    w.bits(dod as u64, 14);
                } else if fits(dod, 17) {
                    w.bits(0b110, 3);
                    w.bits(dod as u64, 17);
                } else if fits(dod, 20) {
                    w.bits(0b1110, 4);
                    w.bits(dod as u64, 20);
                } else {
                    w.bits(0b1111, 4);
                    w.bits(dod as u64, 64);
                }
                t_delta = d;
                write_value(&mut w, vb, v_prev, &mut leading, &mut trailing);
            }
        }
        t_prev = t;
        v_prev = vb;
    }
    let n = samples.len() as u16;
    w.bytes[..2].copy_from_slice(&n.to_be_bytes());
    w.bytes
}

fn write_value(w: &mut BitWriter, vb: u64, prev: u64, leading: &mut u8, trailing: &mut u8) {
    let delta = vb ^ prev;
    if delta == 0 {
        w.bit(false);
        return;
    }
    w.bit(true);
    let mut lz = delta.leading_zeros() as u8;
    let tz = delta.trailing_zeros() as u8;
    if lz >= 32 {
        lz = 31;
    }
    if *leading != 0xff && lz >= *leading && tz >= *trailing {
        w.bit(false);
        w.bits(delta >> *trailing, 64 - *leading - *trailing);
        return;
    }
    *leading = lz;
    *trailing = tz;
    w.bit(true);
    w.bits(lz as u64, 5);
    let sig = 64 - lz - tz;
    // 64 significant bits are written as 0 in the 6-bit field.
    w.bits(sig as u64, 6);
    w.bits(delta >> tz, sig);
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("corrupt XOR chunk")]
pub struct ChunkError;

struct BitReader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl BitReader<'_> {
    fn bit(&mut self) -> Result<bool, ChunkError> {
        let byte = *self.b.get(self.pos / 8).ok_or(ChunkError)?;
        let r = (byte >> (7 - self.pos % 8)) & 1 == 1;
        self.pos += 1;
        Ok(r)
    }
    fn bits(&mut self, n: u8) -> Result<u64, ChunkError> {
        let mut v = 0u64;
        for _ in 0..n {
            v = (v << 1) | self.bit()? as u64;
        }
        Ok(v)
    }
    fn uvarint(&mut self) -> Result<u64, ChunkError> {
        let (mut v, mut shift) = (0u64, 0u32);
        loop {
            let b = self.bits(8)?;
            v |= (b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
            shift += 7;
            if shift > 63 {
                return Err(ChunkError);
            }
        }
    }
}

/// Decodes an XOR chunk (remote-read clients, tests).
pub fn decode_xor(data: &[u8]) -> Result<Vec<(i64, f64)>, ChunkError> {
    if data.len() < 2 {
        return Err(ChunkError);
    }
    let n = u16::from_be_bytes([data[0], data[1]]) as usize;
    let mut r = BitReader {
        b: &data[2..],
        pos: 0,
    };
    let mut out = Vec::with_capacity(n);
    let (mut t, mut t_delta, mut v) = (0i64, 0i64, 0u64);
    let (mut leading, mut trailing) = (0u8, 0u8);
    for i in 0..n {
        match i {
            0 => {
                let u = r.uvarint()?;
                t = ((u >> 1) as i64) ^ -((u & 1) as i64);
                v = r.bits(64)?;
            }
            _ => {
                if i == 1 {
                    t_delta = r.uvarint()? as i64;
                } else {
                    let mut prefix = 0u8;
                    while prefix < 4 && r.bit()? {
                        prefix += 1;
                    }
                    let dod = match prefix {
                        0 => 0,
                        1 => sign_extend(r.bits(14)?, 14),
                        2 => sign_extend(r.bits(17)?, 17),
                        3 => sign_extend(r.bits(20)?, 20),
                        _ => r.bits(64)? as i64,
                    };
                    t_delta = t_delta.wrapping_add(dod);
                }
                // Wrapping, as Prometheus does: a hostile chunk gives odd times, never a panic.
                t = t.wrapping_add(t_delta);
                if r.bit()? {
                    if r.bit()? {
                        leading = r.bits(5)? as u8;
                        let mut sig = r.bits(6)? as u8;
                        if sig == 0 {
                            sig = 64;
                        }
                        trailing = 64u8.checked_sub(leading + sig).ok_or(ChunkError)?;
                    }
                    let sig = 64 - leading - trailing;
                    v ^= r.bits(sig)? << trailing;
                }
            }
        }
        out.push((t, f64::from_bits(v)));
    }
    Ok(out)
}

fn sign_extend(v: u64, n: u32) -> i64 {
    // Prometheus reads these as "values above 2^(n-1) are negative".
    if v > 1 << (n - 1) {
        v as i64 - (1i64 << n)
    } else {
        v as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_chunk_bytes() {
        // Two samples: t=1000 v=1, t=2000 v=1. Header 0002, zigzag varint 1000 = d0 0f,
        // 64 bits of 1.0, uvarint 1000 = e8 07, then one 0 bit (same value).
        let c = encode_xor(&[(1000, 1.0), (2000, 1.0)]);
        assert_eq!(
            c,
            vec![0, 2, 0xd0, 0x0f, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0xe8, 0x07, 0x00]
        );
        assert_eq!(decode_xor(&c).unwrap(), vec![(1000, 1.0), (2000, 1.0)]);
    }

    #[test]
    fn stale_nan_and_irregular_times_survive() {
        let stale = f64::from_bits(crate::STALE_NAN_BITS);
        let s = vec![
            (-5, 0.5),
            (15_000, stale),
            (30_001, 2.0),
            (30_002, f64::NAN),
            (10_000_000_000, -0.0),
            (10_000_000_001, f64::INFINITY),
        ];
        let back = decode_xor(&encode_xor(&s)).unwrap();
        assert_eq!(back.len(), s.len());
        for (a, b) in s.iter().zip(&back) {
            assert_eq!((a.0, a.1.to_bits()), (b.0, b.1.to_bits()));
        }
    }

    proptest! {
        #[test]
        fn round_trip(start in -1_000_000_000i64..2_000_000_000_000, deltas in proptest::collection::vec(0i64..10_000_000, 0..200), vals in proptest::collection::vec(any::<u64>(), 200)) {
            let mut t = start;
            let samples: Vec<(i64, f64)> = std::iter::once(0).chain(deltas).enumerate().map(|(i, d)| { t += d; (t, f64::from_bits(vals[i % vals.len()])) }).collect();
            let back = decode_xor(&encode_xor(&samples)).unwrap();
            prop_assert_eq!(back.iter().map(|(t, v)| (*t, v.to_bits())).collect::<Vec<_>>(), samples.iter().map(|(t, v)| (*t, v.to_bits())).collect::<Vec<_>>());
        }
    }

    /// Fuzz finding (tests/fuzz, prom_chunks): time deltas overflowed i64 while decoding a
    /// hostile chunk. They wrap, as in Prometheus, and extreme times still round-trip.
    #[test]
    fn extreme_time_deltas_wrap() {
        let samples = [(i64::MIN, 1.0), (i64::MAX, 2.0), (0, 3.0), (i64::MAX, 4.0)];
        let back = decode_xor(&encode_xor(&samples)).unwrap();
        assert_eq!(back, samples);
        let mut chunk = encode_xor(&[(i64::MAX - 1, 1.0), (i64::MAX, 1.0)]);
        chunk[1] = 3; // a third sample: one more delta of 1 past i64::MAX
        chunk.extend_from_slice(&[0, 0, 0]);
        assert!(decode_xor(&chunk).is_ok());
    }
}
