//! OpenTelemetry metrics over OTLP/HTTP, pure and without I/O:
//!
//! * [`proto`]: the OTLP metrics messages, written by hand for prost;
//! * [`json`]: the same request in OTLP/JSON;
//! * [`translate`]: OTLP metrics → Prometheus series, named as Prometheus 3.x's OTLP receiver
//!   names them (its default `UnderscoreEscapingWithSuffixes`).

pub mod json;
pub mod proto;
pub mod translate;
