//! The client side of Chat Completions: what a caller sends the gateway, and
//! what the gateway answers.

pub(crate) mod request;
pub(crate) mod response;
pub mod stream;
