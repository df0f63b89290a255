//! Test support, kept out of the product: the HBase Thrift test double (no real HBase can be
//! installed where tsgate is developed) and the conformance suite every `Store` backend runs.
//! Tests depend on this crate; the `tsgate` binary only with its `test-double` feature.

pub mod conformance;
pub mod hbase_double;
