//! Prometheus wire codecs for tsgate: remote-write 1.0 (`prometheus.WriteRequest`) and 2.0
//! (`io.prometheus.write.v2.Request`), remote-read requests and responses, the snappy block
//! codec with a decompressed-size cap, the XOR ("Gorilla") chunk encoder and the chunked-frame
//! writer of streamed remote read. Pure: no I/O, no storage.
//!
//! The messages are written by hand with prost's derive macros (field numbers and types as in
//! Prometheus' `prompb/*.proto`); tests check them against bytes produced by real encoders.

pub mod chunk;
pub mod frame;
pub mod proto;
pub mod snappy;
pub mod v1_borrowed;
pub mod v2;

/// The staleness marker: a NaN with exactly these bits marks a series that has ended.
pub const STALE_NAN_BITS: u64 = 0x7ff0_0000_0000_0002;

pub fn is_stale_nan(v: f64) -> bool {
    v.to_bits() == STALE_NAN_BITS
}
