//! completions wire crate (being built).
