//! Length-prefixed frames (see pickle port).
