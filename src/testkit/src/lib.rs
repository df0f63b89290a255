//! Test support, kept out of the product: the HBase Thrift test double (no real HBase can be
//! installed where tsgate is developed), a runner for Google's Bigtable emulator and the conformance suite every `Store` backend runs.
//! Tests depend on this crate; the `tsgate` binary only with its `test-double` feature.

pub mod bigtable_emulator;
pub mod conformance;
pub mod hbase_double;
