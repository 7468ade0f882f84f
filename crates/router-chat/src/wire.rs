//! Chat Completions wire types: the JSON exactly as clients and suppliers write it.
//!
//! The same types serve both parties: a client's request and the body sent
//! on to a Chat supplier are both [`request::ChatRequest`]; a supplier's
//! reply and the reply written to a client are both
//! [`response::ChatCompletion`] (and [`chunk::ChatCompletionChunk`] when
//! streaming). Conversion to and from the canonical model is written by hand
//! in the `client` and `supplier` modules.
//!
//! Open world: request and message objects keep unknown fields in a
//! `#[serde(flatten)]` map, unknown content parts are kept whole
//! ([`request::ContentPart::Unknown`]) and a supplier's unknown
//! `finish_reason` is [`response::FinishReason::Other`]. Outgoing optionals
//! are skipped when absent, except the fields OpenAI's schema defines as
//! required-but-nullable (`finish_reason`, `logprobs`, `message.content`,
//! `error.param`), which a client expects to see as `null`.

pub mod chunk;
pub mod request;
pub mod response;

/// Serialize a wire value to JSON bytes (an `internal_error` envelope should
/// that ever fail, rather than a panic).
pub(crate) use router_canonical::openai_error::to_json_bytes;
