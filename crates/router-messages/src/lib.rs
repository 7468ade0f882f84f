//! messages wire crate (being built).
