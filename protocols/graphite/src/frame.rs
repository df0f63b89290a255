//! The pickle port's framing: a 4-byte big-endian length, then that many bytes.

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("frame of {len} bytes is larger than the limit of {max}")]
    TooLarge { len: usize, max: usize },
}

/// Looks for one whole frame at the start of `buf`. `Ok(Some((header + payload length,
/// payload range)))` when complete, `Ok(None)` when more bytes are needed.
pub fn next_frame(
    buf: &[u8],
    max: usize,
) -> Result<Option<(usize, std::ops::Range<usize>)>, FrameError> {
    let Some(head) = buf.get(..4) else {
        return Ok(None);
    };
    let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
    if len > max {
        return Err(FrameError::TooLarge { len, max });
    }
    if buf.len() < 4 + len {
        return Ok(None);
    }
    Ok(Some((4 + len, 4..4 + len)))
}

/// Prefixes a payload with its length (for senders and tests).
pub fn encode(payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(payload.len() + 4);
    v.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    v.extend_from_slice(payload);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames() {
        let mut b = encode(b"abc");
        b.extend_from_slice(&encode(b""));
        assert_eq!(next_frame(&b, 10), Ok(Some((7, 4..7))));
        assert_eq!(next_frame(&b[7..], 10), Ok(Some((4, 4..4))));
        assert_eq!(next_frame(&b[..6], 10), Ok(None));
        assert_eq!(next_frame(&b[..2], 10), Ok(None));
        assert_eq!(
            next_frame(&encode(&[0; 11]), 10),
            Err(FrameError::TooLarge { len: 11, max: 10 })
        );
    }
}
