//! The supplier side of Chat Completions: what the gateway sends a Chat
//! supplier, and what that supplier answers.

pub mod error;
pub(crate) mod request;
pub(crate) mod response;
pub mod stream;
