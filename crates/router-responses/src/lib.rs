//! responses wire crate (being built).
