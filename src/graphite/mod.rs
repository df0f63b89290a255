//! Graphite: carbon ingest (plaintext TCP/UDP, pickle) and the name rules shared with the
//! graphite-web API.

pub mod names;
pub mod pickle;
pub mod plaintext;
pub mod write;
