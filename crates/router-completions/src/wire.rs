//! Legacy Completions wire types: the JSON exactly as clients write it and
//! as the router answers.
//!
//! The request body is [`request::CompletionBody`]; the reply, and every
//! chunk of a stream, is a [`response::TextCompletion`] (OpenAI uses one
//! object for both). Conversion to and from the canonical model is written by
//! hand in `from_wire.rs`, `to_wire.rs` and `stream.rs`.
//!
//! Open world: unknown top-level request fields land in a `#[serde(flatten)]`
//! map (accepted). Outgoing optionals are skipped when absent, except
//! the members OpenAI's schema defines as required-but-nullable
//! (`choices[].logprobs`, a stream chunk's `finish_reason`, `error.param`),
//! which a client expects to see as `null`.

pub mod request;
pub mod response;

/// Serialize a wire value to JSON bytes (an `internal_error` envelope should
/// that ever fail, rather than a panic).
pub(crate) use router_canonical::openai_error::to_json_bytes;
