//! The request lifecycle: catalog, route selection, retries within one
//! deadline, pricing, and the single reservation that settles once.
//!
//! Core knows no SQL and no HTTP server. It talks to storage through
//! [`store::Store`] and to suppliers through [`supplier::Suppliers`]; the
//! `router-store` and `router-supply` crates implement them and the server
//! wires them together.

pub mod store;
