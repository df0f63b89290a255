//! Remote write 2.0: `io.prometheus.write.v2.Request` with its symbols table.

use prost::Message;

#[derive(Clone, PartialEq, Message)]
pub struct Request {
    // 1..3 reserved, so a v1 decoder reads a v2 body as empty and vice versa.
    #[prost(string, repeated, tag = "4")]
    pub symbols: Vec<String>,
    #[prost(message, repeated, tag = "5")]
    pub timeseries: Vec<TimeSeries>,
}

#[derive(Clone, PartialEq, Message)]
pub struct TimeSeries {
    #[prost(uint32, repeated, tag = "1")]
    pub labels_refs: Vec<u32>,
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
    #[prost(message, repeated, tag = "3")]
    pub histograms: Vec<crate::proto::Histogram>,
    #[prost(message, repeated, tag = "4")]
    pub exemplars: Vec<Exemplar>,
    #[prost(message, optional, tag = "5")]
    pub metadata: Option<Metadata>,
    // 6: created_timestamp before 3.8, reserved since; ignored.
}

#[derive(Clone, PartialEq, Message)]
pub struct Sample {
    #[prost(double, tag = "1")]
    pub value: f64,
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
    #[prost(int64, tag = "3")]
    pub start_timestamp: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct Exemplar {
    #[prost(uint32, repeated, tag = "1")]
    pub labels_refs: Vec<u32>,
    #[prost(double, tag = "2")]
    pub value: f64,
    #[prost(int64, tag = "3")]
    pub timestamp: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct Metadata {
    /// Same numbering as v1's `MetricType` (METRIC_TYPE_ prefixed names).
    #[prost(int32, tag = "1")]
    pub r#type: i32,
    #[prost(uint32, tag = "3")]
    pub help_ref: u32,
    #[prost(uint32, tag = "4")]
    pub unit_ref: u32,
}

/// Why a v2 request's symbol references cannot be resolved.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SymbolError {
    #[error("symbols table must start with the empty string")]
    FirstNotEmpty,
    #[error("symbol reference {0} out of range (table has {1} entries)")]
    OutOfRange(u32, usize),
    #[error("labels_refs has an odd number of entries ({0})")]
    OddRefs(usize),
}

impl Request {
    /// Resolves one symbol reference, bounds-checked.
    pub fn symbol(&self, r: u32) -> Result<&str, SymbolError> {
        self.symbols
            .get(r as usize)
            .map(|s| s.as_str())
            .ok_or(SymbolError::OutOfRange(r, self.symbols.len()))
    }

    /// Checks the table's first entry when there is a table at all.
    pub fn check_symbols(&self) -> Result<(), SymbolError> {
        match self.symbols.first() {
            Some(s) if !s.is_empty() => Err(SymbolError::FirstNotEmpty),
            _ => Ok(()),
        }
    }

    /// A series' (name, value) pairs, in wire order.
    pub fn labels<'a>(&'a self, refs: &[u32]) -> Result<Vec<(&'a str, &'a str)>, SymbolError> {
        if !refs.len().is_multiple_of(2) {
            return Err(SymbolError::OddRefs(refs.len()));
        }
        refs.chunks(2)
            .map(|p| Ok((self.symbol(p[0])?, self.symbol(p[1])?)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_example_round_trips_and_resolves() {
        let req = Request {
            symbols: vec![
                "".into(),
                "__name__".into(),
                "up".into(),
                "job".into(),
                "a".into(),
            ],
            timeseries: vec![TimeSeries {
                labels_refs: vec![1, 2, 3, 4],
                samples: vec![Sample {
                    value: 1.0,
                    timestamp: 1000,
                    start_timestamp: 0,
                }],
                metadata: Some(Metadata {
                    r#type: 2,
                    help_ref: 0,
                    unit_ref: 0,
                }),
                ..Default::default()
            }],
        };
        let back = Request::decode(req.encode_to_vec().as_slice()).unwrap();
        assert_eq!(back, req);
        assert_eq!(
            back.labels(&back.timeseries[0].labels_refs).unwrap(),
            vec![("__name__", "up"), ("job", "a")]
        );
        assert_eq!(back.labels(&[1, 9]), Err(SymbolError::OutOfRange(9, 5)));
        assert_eq!(back.labels(&[1]), Err(SymbolError::OddRefs(1)));
        // v1 and v2 share no field numbers: each decodes the other as empty.
        let v1 = crate::proto::WriteRequest::decode(req.encode_to_vec().as_slice()).unwrap();
        assert!(v1.timeseries.is_empty() && v1.metadata.is_empty());
    }
}
