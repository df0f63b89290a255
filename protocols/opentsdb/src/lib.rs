//! OpenTSDB 2.4 wire codecs for tsgate: value classification, name rules, the telnet line
//! protocol and the `/api/put` JSON body. Pure: no I/O, no storage.
//!
//! Behaviour (including error texts) follows `shared/spec/opentsdb.md` §2.4, §4.5, §4.6, §7
//! and §8.3.

pub mod histogram;
mod javamap;
mod json;
pub mod names;
pub mod point;
pub mod put_json;
pub mod rollup;
pub mod telnet;
pub mod value;

pub use names::NameError;
pub use point::{validate_point, DataPoint, Limits, OwnedDataPoint, PointError};
pub use put_json::{parse_body, BodyError, JsonPoint};
pub use telnet::{
    help_line, parse_import_line, parse_line, split_put, Command, PutParts, TelnetError,
};
pub use value::{parse_long, parse_value, NumberFormatError, Value, ValueError};
