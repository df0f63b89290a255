//! Snappy *block* format (not the framed stream format), with the decoded size checked
//! against a cap from the leading varint before anything is allocated.

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SnappyError {
    #[error("snappy: corrupt input: {0}")]
    Corrupt(String),
    #[error("snappy: decoded length {declared} exceeds the limit of {limit} bytes")]
    TooLarge { declared: usize, limit: usize },
}

pub fn decompress(input: &[u8], limit: usize) -> Result<Vec<u8>, SnappyError> {
    if input.is_empty() {
        return Ok(Vec::new());
    }
    let declared =
        snap::raw::decompress_len(input).map_err(|e| SnappyError::Corrupt(e.to_string()))?;
    if declared > limit {
        return Err(SnappyError::TooLarge { declared, limit });
    }
    snap::raw::Decoder::new()
        .decompress_vec(input)
        .map_err(|e| SnappyError::Corrupt(e.to_string()))
}

pub fn compress(input: &[u8]) -> Vec<u8> {
    snap::raw::Encoder::new()
        .compress_vec(input)
        .expect("snappy block compression of an in-memory buffer cannot fail")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn cap_is_checked_before_decoding() {
        let big = compress(&vec![7u8; 10_000]);
        assert_eq!(
            decompress(&big, 9_999),
            Err(SnappyError::TooLarge {
                declared: 10_000,
                limit: 9_999
            })
        );
        assert_eq!(decompress(&big, 10_000).unwrap().len(), 10_000);
        // A varint claiming 128 MiB followed by nothing: refused without allocating.
        assert!(matches!(
            decompress(&[0x80, 0x80, 0x80, 0x40], 1 << 20),
            Err(SnappyError::TooLarge { .. })
        ));
        assert!(matches!(
            decompress(&[0x05, 0xff, 0xff], 100),
            Err(SnappyError::Corrupt(_))
        ));
    }

    proptest! {
        #[test]
        fn round_trip(data in proptest::collection::vec(any::<u8>(), 0..4096)) {
            prop_assert_eq!(decompress(&compress(&data), 1 << 20).unwrap(), data);
        }
    }
}
