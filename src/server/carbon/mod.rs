//! Carbon listeners: Graphite plaintext over TCP and UDP, and pickle. Each reads lines or
//! frames off a socket, maps names through the Graphite name rules (`graphite::names`) and
//! hands the batch to the ingest path. Carbon has no authentication; these ports are meant for
//! trusted networks.

pub mod pickle;
pub mod plaintext;
pub mod write;
