//! Cardinality: how many series the store holds (counts and limits).
