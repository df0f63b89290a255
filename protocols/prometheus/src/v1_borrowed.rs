//! A zero-copy decoder for remote-write 1.0 bodies, for the ingest hot path: label names and
//! values are borrowed from the decompressed buffer and the per-series vectors are reused, so
//! decoding allocates nothing per series. Same wire rules as the prost messages in `proto`
//! (unknown fields skipped, strings checked as UTF-8); metadata goes through prost (rare).

use crate::proto::MetricMetadata;
use prost::Message;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("cannot decode prometheus.WriteRequest: {0}")]
pub struct DecodeError(pub String);

/// One series as the callback sees it; its vectors are reused between calls (`labels` makes a
/// new one per call).
#[derive(Debug, Default)]
pub struct SeriesRef<'a> {
    /// Each label message as encoded, in wire order: decoded by [`SeriesRef::labels`] only
    /// when asked, since a receiver that knows `labels_raw` from before has no use for them.
    label_fields: Vec<&'a [u8]>,
    /// The label fields exactly as encoded, when they are adjacent in the message (senders
    /// write them first, together): equal bytes mean equal labels, so a receiver can
    /// remember a series by them.
    pub labels_raw: Option<&'a [u8]>,
    pub samples: Vec<(i64, f64)>,
    pub exemplars: usize,
    pub histograms: usize,
}

impl<'a> SeriesRef<'a> {
    /// The labels (name, value), in wire order. Fails on a malformed label message or one
    /// that is not UTF-8; bytes equal to a `labels_raw` that decoded before cannot fail.
    pub fn labels(&self) -> Result<Vec<(&'a str, &'a str)>, DecodeError> {
        self.label_fields.iter().map(|f| label(f)).collect()
    }
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

fn err(m: &str) -> DecodeError {
    DecodeError(m.to_string())
}

impl<'a> Reader<'a> {
    fn done(&self) -> bool {
        self.pos >= self.b.len()
    }
    /// Field keys, lengths and most timestamps' first bytes are one-byte varints: those take
    /// no loop.
    #[inline]
    fn varint(&mut self) -> Result<u64, DecodeError> {
        match self.b.get(self.pos) {
            Some(&byte) if byte < 0x80 => {
                self.pos += 1;
                Ok(byte as u64)
            }
            _ => self.varint_long(),
        }
    }
    fn varint_long(&mut self) -> Result<u64, DecodeError> {
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let byte = *self
                .b
                .get(self.pos)
                .ok_or_else(|| err("truncated varint"))?;
            self.pos += 1;
            if shift == 63 && byte > 1 {
                return Err(err("varint overflow"));
            }
            v |= ((byte & 0x7f) as u64) << shift;
            if byte < 0x80 {
                return Ok(v);
            }
        }
        Err(err("varint overflow"))
    }
    #[inline]
    fn bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let n = self.varint()? as usize;
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| err("length beyond the buffer"))?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn fixed64(&mut self) -> Result<u64, DecodeError> {
        let s = self
            .b
            .get(self.pos..self.pos + 8)
            .ok_or_else(|| err("truncated fixed64"))?;
        self.pos += 8;
        Ok(u64::from_le_bytes(s.try_into().unwrap()))
    }
    #[inline]
    fn key(&mut self) -> Result<(u64, u8), DecodeError> {
        let k = self.varint()?;
        Ok((k >> 3, (k & 7) as u8))
    }
    fn skip(&mut self, wire: u8) -> Result<(), DecodeError> {
        match wire {
            0 => self.varint().map(|_| ()),
            1 => self.fixed64().map(|_| ()),
            2 => self.bytes().map(|_| ()),
            5 => {
                self.pos += 4;
                if self.pos > self.b.len() {
                    return Err(err("truncated fixed32"));
                }
                Ok(())
            }
            w => Err(err(&format!("unsupported wire type {w}"))),
        }
    }
}

fn utf8(b: &[u8]) -> Result<&str, DecodeError> {
    std::str::from_utf8(b).map_err(|_| err("label is not valid UTF-8"))
}

fn label(b: &[u8]) -> Result<(&str, &str), DecodeError> {
    let mut r = Reader { b, pos: 0 };
    let (mut name, mut value) = ("", "");
    while !r.done() {
        match r.key()? {
            (1, 2) => name = utf8(r.bytes()?)?,
            (2, 2) => value = utf8(r.bytes()?)?,
            (_, w) => r.skip(w)?,
        }
    }
    Ok((name, value))
}

fn sample(b: &[u8]) -> Result<(i64, f64), DecodeError> {
    let mut r = Reader { b, pos: 0 };
    let (mut t, mut v) = (0i64, 0f64);
    while !r.done() {
        match r.key()? {
            (1, 1) => v = f64::from_bits(r.fixed64()?),
            (2, 0) => t = r.varint()? as i64,
            (_, w) => r.skip(w)?,
        }
    }
    Ok((t, v))
}

/// Walks a `WriteRequest`, calling `series` for every time series and `metadata` for every
/// metadata entry, in wire order. An error from `series` (say, from [`SeriesRef::labels`])
/// ends the walk and is returned.
pub fn decode<'a>(
    buf: &'a [u8],
    mut series: impl FnMut(&SeriesRef<'a>) -> Result<(), DecodeError>,
    mut metadata: impl FnMut(MetricMetadata),
) -> Result<(), DecodeError> {
    let mut r = Reader { b: buf, pos: 0 };
    let mut s = SeriesRef::default();
    while !r.done() {
        match r.key()? {
            (1, 2) => {
                let mut ts = Reader {
                    b: r.bytes()?,
                    pos: 0,
                };
                s.label_fields.clear();
                s.samples.clear();
                s.exemplars = 0;
                s.histograms = 0;
                let (mut span, mut split): (Option<(usize, usize)>, bool) = (None, false);
                while !ts.done() {
                    let at = ts.pos;
                    match ts.key()? {
                        (1, 2) => {
                            s.label_fields.push(ts.bytes()?);
                            span = match span {
                                None => Some((at, ts.pos)),
                                Some((a, e)) if e == at => Some((a, ts.pos)),
                                other => {
                                    split = true;
                                    other
                                }
                            };
                        }
                        (2, 2) => s.samples.push(sample(ts.bytes()?)?),
                        (3, 2) => {
                            ts.bytes()?;
                            s.exemplars += 1;
                        }
                        (4, 2) => {
                            ts.bytes()?;
                            s.histograms += 1;
                        }
                        (_, w) => ts.skip(w)?,
                    }
                }
                s.labels_raw = if split {
                    None
                } else {
                    span.map(|(a, e)| &ts.b[a..e])
                };
                series(&s)?;
            }
            (3, 2) => metadata(
                MetricMetadata::decode(r.bytes()?).map_err(|e| DecodeError(e.to_string()))?,
            ),
            (_, w) => r.skip(w)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{Label, Sample, TimeSeries, WriteRequest};
    use proptest::prelude::*;

    fn arb_request() -> impl Strategy<Value = WriteRequest> {
        let label = ("\\PC{0,8}", "\\PC{0,8}").prop_map(|(name, value)| Label { name, value });
        let sample = (any::<i64>(), any::<u64>()).prop_map(|(timestamp, bits)| Sample {
            value: f64::from_bits(bits),
            timestamp,
        });
        let series = (
            proptest::collection::vec(label, 0..5),
            proptest::collection::vec(sample, 0..4),
        )
            .prop_map(|(labels, samples)| TimeSeries {
                labels,
                samples,
                ..Default::default()
            });
        proptest::collection::vec(series, 0..6).prop_map(|timeseries| WriteRequest {
            timeseries,
            metadata: vec![],
        })
    }

    proptest! {
        #[test]
        fn agrees_with_prost(req in arb_request()) {
            let bytes = req.encode_to_vec();
            let mut got = Vec::new();
            decode(&bytes, |s| {
                got.push((s.labels()?.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>(), s.samples.iter().map(|(t, v)| (*t, v.to_bits())).collect::<Vec<_>>()));
                Ok(())
            }, |_| {}).unwrap();
            let want: Vec<_> = req.timeseries.iter().map(|t| (t.labels.iter().map(|l| (l.name.clone(), l.value.clone())).collect::<Vec<_>>(), t.samples.iter().map(|s| (s.timestamp, s.value.to_bits())).collect::<Vec<_>>())).collect();
            prop_assert_eq!(got, want);
        }

        #[test]
        fn raw_labels_name_the_labels(req in arb_request()) {
            // prost writes labels first and together: every series with labels has its span,
            // and the span alone, read as a series, gives back the same labels.
            let bytes = req.encode_to_vec();
            let mut seen = Vec::new();
            decode(&bytes, |s| {
                seen.push((s.labels()?.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>(), s.labels_raw.map(<[u8]>::to_vec)));
                Ok(())
            }, |_| {}).unwrap();
            for (labels, raw) in &seen {
                prop_assert_eq!(raw.is_some(), !labels.is_empty());
                if let Some(raw) = raw {
                    let mut body = vec![0x0A];
                    prost::encoding::encode_varint(raw.len() as u64, &mut body);
                    body.extend_from_slice(raw);
                    let mut back = Vec::new();
                    decode(&body, |s| {
                        back.push(s.labels()?.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>());
                        Ok(())
                    }, |_| {}).unwrap();
                    prop_assert_eq!(&back[0], labels);
                }
            }
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode(&bytes, |s| s.labels().map(|_| ()), |_| {});
        }
    }

    #[test]
    fn metadata_and_unknown_fields() {
        let req = WriteRequest {
            timeseries: vec![],
            metadata: vec![MetricMetadata {
                r#type: 1,
                metric_family_name: "x".into(),
                help: "h".into(),
                unit: "".into(),
            }],
        };
        let mut bytes = req.encode_to_vec();
        bytes.extend_from_slice(&[0x10, 0x05]); // field 2 (reserved), varint
        let mut metas = Vec::new();
        decode(&bytes, |_| Ok(()), |m| metas.push(m)).unwrap();
        assert_eq!(metas, req.metadata);
        assert!(decode(&[0x0a, 0x05, 0x0a], |_| Ok(()), |_| {}).is_err());
    }
}
