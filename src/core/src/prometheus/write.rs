//! Remote-write normalisation: decoded v1/v2 requests → stored series and encoded samples.
//! Every sample is checked here; what cannot be stored is reported by name, and the rest is
//! still written (the spec lets a receiver ingest the valid part of a request it answers 400).

use super::labels::{to_stored, StoredSeries};
use super::metadata::Meta;
use crate::ingest::encode::encode_sample;
use crate::ingest::PointError;
use crate::write::shard::StoredPoint;
use tsgate_prometheus::proto::MetricType;
use tsgate_prometheus::v1_borrowed::DecodeError;
use tsgate_prometheus::v2;
use tsgate_schema::RawPoint;

/// One request, normalised.
#[derive(Debug, Default)]
pub struct Batch<'a> {
    pub series: Vec<StoredSeries<'a>>,
    /// Per entry of `series`: what its raw label bytes say (see [`Memo`]).
    pub memo: Vec<Memo>,
    /// (index into `series`, the sample's cell or why it cannot be stored)
    pub samples: Vec<(usize, SampleCell)>,
    /// The valid samples of series the memo knew: ready for the writer, with no entry in
    /// `series` or `samples` (a known series is in `series` only for a sample in error).
    /// Senders repeat their series, so this is where nearly every sample goes, in one step.
    pub known: Vec<StoredPoint>,
    pub metadata: Vec<(String, Meta)>,
    /// Problems that make the answer a 400: the first [`ERRORS_KEPT`], each cut to
    /// [`ERROR_BYTES_MAX`] (see [`Batch::error`]).
    pub errors: Vec<String>,
    /// Problems past the first [`ERRORS_KEPT`]: counted, never written out.
    pub errors_more: usize,
    pub histograms: usize,
    pub exemplars: usize,
    /// Samples not kept because their series' labels were refused.
    pub refused: Refused,
}

/// A sample encoded for storage: its row base and cell, or why it cannot be stored.
pub type SampleCell = Result<(u32, RawPoint), PointError>;
/// Error messages a request keeps; the answer names five and counts the rest.
pub const ERRORS_KEPT: usize = 10;
/// Longest error message kept (a series' whole escaped label set can be a body's size).
pub const ERROR_BYTES_MAX: usize = 512;

impl Batch<'_> {
    /// Records a problem; its message is only built while fewer than [`ERRORS_KEPT`] are
    /// kept: a request of many invalid samples otherwise built one message, with the whole
    /// label set, per sample (a 171 KiB request took 1.9 GB).
    pub fn error(&mut self, message: impl FnOnce() -> String) {
        if self.errors.len() >= ERRORS_KEPT {
            self.errors_more += 1;
            return;
        }
        let mut m = message();
        if m.len() > ERROR_BYTES_MAX {
            let mut cut = ERROR_BYTES_MAX;
            while !m.is_char_boundary(cut) {
                cut -= 1;
            }
            m.truncate(cut);
            m.push('…');
        }
        self.errors.push(m);
    }
}

/// A sample's error as kept per sample: its message only while messages are still kept.
fn sample_error(b: &Batch, e: PointError) -> PointError {
    if b.errors.len() >= ERRORS_KEPT {
        PointError::Invalid(String::new())
    } else {
        e
    }
}

/// A series' standing in the raw-label memo (`SeriesResolver::raw_reader`).
#[derive(Debug)]
pub enum Memo {
    /// Not remembered (2.0 requests; labels not adjacent on the wire).
    None,
    /// Named before by the same label bytes: its `series` entry is left empty.
    Known(crate::series::Series),
    /// To remember under this key once the series is accepted.
    Remember(Vec<u8>),
}

/// Samples dropped with their series, by why (for the ingest metrics).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    /// More labels than `prometheus.max_tags`.
    pub tags: usize,
    /// Labels that are malformed (no name, duplicates, bad symbol references).
    pub labels: usize,
}

fn meta_kind(t: i32) -> &'static str {
    MetricType::try_from(t)
        .unwrap_or(MetricType::Unknown)
        .api_name()
}

/// Decodes and normalises a (decompressed) 1.0 body; names borrow from it.
/// `known` answers which series a memo key (`p` + the raw label bytes) named before.
pub fn from_v1<'a>(
    raw: &'a [u8],
    max_tags: usize,
    known: &dyn Fn(&[u8]) -> Option<crate::series::Series>,
) -> Result<Batch<'a>, DecodeError> {
    let mut b = Batch::default();
    let mut metadata = Vec::new();
    let mut key = Vec::with_capacity(256);
    tsgate_prometheus::v1_borrowed::decode(
        raw,
        |s| {
            b.histograms += s.histograms;
            b.exemplars += s.exemplars;
            let mut memo = Memo::None;
            if let Some(labels_raw) = s.labels_raw {
                crate::series::TextKind::Prometheus.begin(&mut key);
                key.extend_from_slice(labels_raw);
                memo = match known(&key) {
                    Some(series) => Memo::Known(series),
                    None => Memo::Remember(key.clone()),
                };
            }
            // A known series' labels are not even decoded (the same bytes decoded before),
            // unless a sample's error message needs them.
            let labels = if matches!(memo, Memo::Known(_)) {
                Vec::new()
            } else {
                s.labels()?
            };
            let describe = || {
                s.labels()
                    .map(|l| super::labels::display(&l))
                    .unwrap_or_default()
            };
            add_series(
                &mut b,
                &labels,
                s.samples.iter().copied(),
                max_tags,
                memo,
                &describe,
            );
            Ok(())
        },
        |m| {
            metadata.push((
                m.metric_family_name,
                Meta {
                    kind: meta_kind(m.r#type).into(),
                    help: m.help,
                    unit: m.unit,
                },
            ))
        },
    )?;
    b.metadata = metadata;
    Ok(b)
}

pub fn from_v2(req: &v2::Request, max_tags: usize) -> Batch<'_> {
    let mut b = Batch::default();
    if let Err(e) = req.check_symbols() {
        b.refused.labels = req.timeseries.iter().map(|t| t.samples.len()).sum();
        b.error(|| e.to_string());
        return b;
    }
    for ts in &req.timeseries {
        b.histograms += ts.histograms.len();
        b.exemplars += ts.exemplars.len();
        let labels = match req.labels(&ts.labels_refs) {
            Ok(l) => l,
            Err(e) => {
                b.refused.labels += ts.samples.len();
                b.error(|| e.to_string());
                continue;
            }
        };
        if let Some(md) = &ts.metadata {
            let name = labels
                .iter()
                .find(|(k, _)| *k == super::labels::METRIC_NAME)
                .map(|(_, v)| v.to_string());
            if let (Some(name), Ok(help), Ok(unit)) =
                (name, req.symbol(md.help_ref), req.symbol(md.unit_ref))
            {
                if md.r#type != 0 || !help.is_empty() || !unit.is_empty() {
                    b.metadata.push((
                        name,
                        Meta {
                            kind: meta_kind(md.r#type).into(),
                            help: help.into(),
                            unit: unit.into(),
                        },
                    ));
                }
            }
        }
        add_series(
            &mut b,
            &labels,
            ts.samples.iter().map(|s| (s.timestamp, s.value)),
            max_tags,
            Memo::None,
            &|| super::labels::display(&labels),
        );
    }
    b
}

/// `labels` may be empty for a `Memo::Known` series; `describe` names the series in errors.
fn add_series<'a>(
    b: &mut Batch<'a>,
    labels: &[(&'a str, &'a str)],
    samples: impl ExactSizeIterator<Item = (i64, f64)>,
    max_tags: usize,
    memo: Memo,
    describe: &dyn Fn() -> String,
) {
    if samples.len() == 0 {
        return;
    }
    if let Memo::Known(series) = memo {
        // Labels accepted before, byte for byte: accepted again, without converting them,
        // and their samples go straight to `known`.
        let mut at = None;
        for (ts, v) in samples {
            match encode_sample(ts, v) {
                Ok((base, point)) => b.known.push(StoredPoint {
                    series,
                    base,
                    point,
                }),
                Err(e) => {
                    b.error(|| format!("{}: {e}", describe()));
                    let e = sample_error(b, e);
                    let idx = *at.get_or_insert_with(|| {
                        b.series.push(StoredSeries {
                            metric: "".into(),
                            tags: Vec::new(),
                        });
                        b.memo.push(Memo::Known(series));
                        b.series.len() - 1
                    });
                    b.samples.push((idx, Err(e)));
                }
            }
        }
        return;
    }
    let stored = match to_stored(labels, max_tags) {
        Ok(s) => s,
        Err(e) => {
            match e {
                super::labels::LabelError::TooMany { .. } => b.refused.tags += samples.len(),
                _ => b.refused.labels += samples.len(),
            }
            b.error(|| e.to_string());
            return;
        }
    };
    let idx = b.series.len();
    b.series.push(stored);
    b.memo.push(memo);
    for (ts, v) in samples {
        let r = encode_sample(ts, v).map_err(|e| {
            b.error(|| format!("{}: {e}", describe()));
            sample_error(b, e)
        });
        b.samples.push((idx, r));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;
    use tsgate_prometheus::proto::{Label, Sample, TimeSeries, WriteRequest};

    fn series(labels: &[(&str, &str)], samples: &[(i64, f64)]) -> TimeSeries {
        TimeSeries {
            labels: labels
                .iter()
                .map(|(k, v)| Label {
                    name: k.to_string(),
                    value: v.to_string(),
                })
                .collect(),
            samples: samples
                .iter()
                .map(|&(timestamp, value)| Sample { value, timestamp })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn values_keep_their_bits() {
        for v in [
            0.0,
            -0.0,
            1.0,
            -3.0,
            0.25,
            1e300,
            f64::NAN,
            f64::from_bits(0x7ff0_0000_0000_0002),
            f64::INFINITY,
        ] {
            let (_, raw) = encode_sample(1_700_000_000_123, v).unwrap();
            assert_eq!(raw.value().unwrap().as_f64().to_bits(), v.to_bits(), "{v}");
        }
        assert!(matches!(
            crate::ingest::encode::data_value(42.0),
            tsgate_schema::DataValue::Int(42)
        ));
        assert!(matches!(
            crate::ingest::encode::data_value(-0.0),
            tsgate_schema::DataValue::F64(_)
        ));
    }

    #[test]
    fn timestamps_whole_seconds_and_ms() {
        let (base, raw) = encode_sample(1_700_000_000_000, 1.0).unwrap();
        assert_eq!(
            (raw.qualifier().len(), raw.timestamp_ms(base)),
            (2, 1_700_000_000_000)
        );
        let (base, raw) = encode_sample(1_700_000_000_007, 1.0).unwrap();
        assert_eq!(
            (raw.qualifier().len(), raw.timestamp_ms(base)),
            (4, 1_700_000_000_007)
        );
        assert!(encode_sample(-1, 1.0).is_err());
        assert!(encode_sample(1_500, 1.0).is_err());
        assert!(encode_sample(4_000, 1.0).is_ok());
    }

    #[test]
    fn bad_series_are_named_and_good_ones_kept() {
        let req = WriteRequest {
            timeseries: vec![
                series(
                    &[("__name__", "up"), ("job", "a")],
                    &[(1_700_000_000_000, 1.0)],
                ),
                series(&[("job", "nameless")], &[(1_700_000_000_000, 1.0)]),
            ],
            metadata: vec![],
        };
        let raw = req.encode_to_vec();
        let b = from_v1(&raw, 8, &|_| None).unwrap();
        assert_eq!((b.series.len(), b.samples.len()), (1, 1));
        assert_eq!(b.errors.len(), 1);
        assert!(
            b.errors[0].contains("nameless") && b.errors[0].contains("no __name__"),
            "{}",
            b.errors[0]
        );
    }

    /// Issue 35: each invalid sample built its own message with the whole escaped label set.
    #[test]
    fn error_messages_are_capped_in_count_and_size() {
        let long = "x".repeat(20_000);
        let bad: Vec<(i64, f64)> = (0..5_000).map(|i| (-1 - i, 1.0)).collect();
        let req = WriteRequest {
            timeseries: vec![
                series(&[("__name__", "up"), ("big", &long)], &bad),
                series(
                    &[("__name__", "up"), ("job", "ok")],
                    &[(1_700_000_000_000, 1.0)],
                ),
            ],
            metadata: vec![],
        };
        let raw = req.encode_to_vec();
        let b = from_v1(&raw, 8, &|_| None).unwrap();
        assert_eq!(b.errors.len(), ERRORS_KEPT);
        assert_eq!(b.errors_more, 5_000 - ERRORS_KEPT);
        assert!(b
            .errors
            .iter()
            .all(|e| e.len() <= ERROR_BYTES_MAX + '…'.len_utf8()));
        assert!(
            b.errors[0].starts_with("up{big=\"xxx"),
            "{}",
            &b.errors[0][..40]
        );
        // Every sample is still accounted for, the valid one ready to store.
        assert_eq!(b.samples.len(), 5_001);
        assert_eq!(b.samples.iter().filter(|(_, r)| r.is_ok()).count(), 1);
    }

    #[test]
    fn known_series_skip_their_labels_but_errors_still_name_them() {
        let req = WriteRequest {
            timeseries: vec![series(
                &[("__name__", "up"), ("job", "a")],
                &[(1_700_000_000_000, 1.0), (-5, 2.0)],
            )],
            metadata: vec![],
        };
        let raw = req.encode_to_vec();
        let known = crate::series::SeriesKey::new(b"known-series-test");
        let b = from_v1(&raw, 8, &|key| {
            (key.first() == Some(&(crate::series::TextKind::Prometheus as u8))).then_some(known)
        })
        .unwrap();
        assert!(matches!(b.memo[..], [Memo::Known(s)] if std::ptr::eq(s, known)));
        // The labels were not converted (the memo's series stands for them), the good sample
        // is ready for the writer...
        assert_eq!(b.series[0].metric, "");
        assert!(
            matches!(b.known[..], [StoredPoint { series, base: 1_699_999_200, .. }] if std::ptr::eq(series, known))
        );
        assert!(matches!(b.samples[..], [(0, Err(_))]));
        // ...yet the bad sample's error names the series from the bytes.
        assert_eq!(b.errors.len(), 1);
        assert!(
            b.errors[0].starts_with("up{job=\"a\"}: timestamp -5 ms"),
            "{}",
            b.errors[0]
        );

        // A label that is not UTF-8 fails the whole body when the series is not known.
        let mut bad = raw.clone();
        let at = bad.windows(2).position(|w| w == b"up").unwrap();
        bad[at] = 0xFF;
        assert!(from_v1(&bad, 8, &|_| None).is_err());
    }
}
