//! Graphite's name rules: dotted paths to metric + tags and back, shared by the carbon
//! listeners (`server::carbon`) and the graphite-web API.

pub mod names;
