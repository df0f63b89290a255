//! Streamed remote-read framing: `uvarint(len(msg))`, CRC32-Castagnoli of the message as 4
//! big-endian bytes, then the message.

pub fn put_uvarint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends one frame carrying `msg`.
pub fn write_frame(out: &mut Vec<u8>, msg: &[u8]) {
    put_uvarint(out, msg.len() as u64);
    out.extend_from_slice(&crc32c::crc32c(msg).to_be_bytes());
    out.extend_from_slice(msg);
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FrameError {
    #[error("truncated frame")]
    Truncated,
    #[error("frame checksum mismatch")]
    Checksum,
}

/// Splits a body into its frames' messages, checking each checksum (clients, tests).
pub fn read_frames(mut body: &[u8]) -> Result<Vec<&[u8]>, FrameError> {
    let mut out = Vec::new();
    while !body.is_empty() {
        let (mut len, mut shift, mut i) = (0u64, 0u32, 0usize);
        loop {
            let b = *body.get(i).ok_or(FrameError::Truncated)?;
            len |= ((b & 0x7f) as u64) << shift;
            i += 1;
            if b < 0x80 {
                break;
            }
            shift += 7;
            if shift > 63 {
                return Err(FrameError::Truncated);
            }
        }
        // Checked: a declared length near 2^64 must not wrap around the bounds check.
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| l.checked_add(i + 4))
            .ok_or(FrameError::Truncated)?;
        if body.len() < end {
            return Err(FrameError::Truncated);
        }
        let len = end - i - 4;
        let crc = u32::from_be_bytes(body[i..i + 4].try_into().unwrap());
        let msg = &body[i + 4..i + 4 + len];
        if crc32c::crc32c(msg) != crc {
            return Err(FrameError::Checksum);
        }
        out.push(msg);
        body = &body[i + 4 + len..];
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_layout_and_round_trip() {
        let mut out = Vec::new();
        write_frame(&mut out, b"123456789");
        // CRC32C("123456789") is the standard check value 0xE3069283.
        assert_eq!(out, b"\x09\xe3\x06\x92\x83123456789");
        let big = vec![1u8; 300];
        write_frame(&mut out, &big);
        assert_eq!(&out[14..16], &[0xac, 0x02]);
        assert_eq!(
            read_frames(&out).unwrap(),
            vec![&b"123456789"[..], &big[..]]
        );
        let mut bad = out.clone();
        bad[5] ^= 1;
        assert_eq!(read_frames(&bad), Err(FrameError::Checksum));
        assert_eq!(read_frames(&out[..20]), Err(FrameError::Truncated));
    }

    /// Fuzz finding (tests/fuzz, prom_chunks): a declared length near 2^64 overflowed the
    /// bounds check.
    #[test]
    fn huge_declared_length_is_truncated() {
        let body = [
            0xf7, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x5f, 0x64, 0xa3, 0x7a, 0xfb,
        ];
        assert_eq!(read_frames(&body), Err(FrameError::Truncated));
    }
}
