//! The supplier side of Messages: what the gateway sends a Messages supplier
//! and how its answers are read.

pub mod error;
pub(crate) mod request;
pub(crate) mod response;
pub mod stream;
