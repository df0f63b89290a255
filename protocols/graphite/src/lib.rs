//! Graphite (carbon) wire codecs, pure and without I/O:
//!
//! * [`plaintext`]: `path value timestamp` lines with carbon's parsing rules;
//! * [`tags`]: Graphite 1.1 tagged series (`name;k=v;…`) parsed and normalised;
//! * [`pickle`]: a safe decoder for carbon's pickle payloads (data opcodes only);
//! * [`frame`]: the 4-byte big-endian length prefix the pickle port uses.

pub mod frame;
pub mod pickle;
pub mod plaintext;
pub mod pyfloat;
pub mod tags;
