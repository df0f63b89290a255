//! Safe pickle decoder.
