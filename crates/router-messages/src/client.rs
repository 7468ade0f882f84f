//! The client side of Messages: what a caller sends the gateway and what it
//! is answered.

pub mod envelope;
pub(crate) mod headers;
pub(crate) mod request;
pub(crate) mod response;
pub mod stream;
