#![warn(unreachable_pub)]
//! Google's Gemini API (`models/{model}:generateContent` and
//! `:streamGenerateContent?alt=sse`) as a supplier dialect: the
//! [`GeminiSupplier`] [`SupplierCodec`]. The same wire serves Vertex AI's
//! publisher models (`…/publishers/google/models/{model}:generateContent`):
//! the route's base URL says which.
//!
//! Supplier only: no client speaks Gemini to the router. Split as the other
//! wire crates' supplier halves: `request.rs` (the body, refusing what
//! Gemini cannot carry), `response.rs` (a reply, usage, finish reasons),
//! `stream.rs` (SSE chunks into canonical events), `wire.rs` (the JSON
//! types both read), `error.rs` (`DecodeError`).
//!
//! Three things differ from the OpenAI and Anthropic dialects:
//!
//! * **No tool-call IDs of its own** (older models) and **thought
//!   signatures** on parts (Gemini 2.5 and 3 must get a function call's
//!   signature back). The codec makes each call's ID `gem_<n>` or, with a
//!   signature, `gem_<n>_<base64url(signature)>`, and puts the signature
//!   back when the call returns in the history; a tool result names its
//!   function by the call it answers.
//! * **Usage**: `candidatesTokenCount` excludes the thoughts; the
//!   canonical output count is candidates plus `thoughtsTokenCount`, its
//!   reasoning count the thoughts; `cachedContentTokenCount` is part of
//!   `promptTokenCount` and read as cache reads.
//! * **Streams end without a terminator**: the chunk with a `finishReason`
//!   (and the final `usageMetadata`) is the last.

mod error;
mod request;
mod response;
mod stream;
mod wire;

pub use error::DecodeError;
pub use stream::StreamDecoder;

/// The canonical model this crate translates to and from, whole.
pub use router_canonical as canonical;
/// The names every wire crate exports at the same paths: `sse`,
/// `ErrorCode`, the codec traits, stream and error types.
pub use router_canonical::surface::*;

use router_canonical::encode_path_segment;

/// The Gemini `generateContent` dialect.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GeminiSupplier {
    /// Whether a reply or stream without token counts is invalid (the
    /// gateway bills by usage, so it turns this on).
    pub require_usage: bool,
}

impl SupplierCodec for GeminiSupplier {
    fn protocol(&self) -> Protocol {
        Protocol::Gemini
    }

    /// The non-streaming path with the model left open; see `request_path`.
    fn path(&self) -> &'static str {
        "/models/{model}:generateContent"
    }

    /// `/models/{model}:generateContent`, or
    /// `/models/{model}:streamGenerateContent?alt=sse` for a stream.
    fn request_path(&self, target: &SupplierTarget<'_>, stream: bool) -> String {
        let model = encode_path_segment(target.model);
        if stream {
            format!("/models/{model}:streamGenerateContent?alt=sse")
        } else {
            format!("/models/{model}:generateContent")
        }
    }

    /// The `GenerateContentRequest` body. The model is in the path.
    fn encode_request(
        &self,
        request: &Request,
        target: &SupplierTarget<'_>,
    ) -> Result<Vec<u8>, ApiError> {
        request.refuse_native_only(self.protocol())?;
        request.refuse_several_choices()?;
        request::encode(request, target)
    }

    /// `x-goog-api-key` when there is a key (the Gemini API's own scheme;
    /// Vertex takes an OAuth bearer token, set as the supplier's `auth`).
    fn headers(&self, _request: &Request, api_key: Option<&str>) -> Vec<(&'static str, String)> {
        api_key
            .map(|key| vec![("x-goog-api-key", key.to_owned())])
            .unwrap_or_default()
    }

    fn decode_response(&self, body: &[u8]) -> Result<Response, SupplierError> {
        response::decode(body, self.require_usage).map_err(SupplierError::from)
    }

    /// Google's error shape, `{"error": {"code", "message", "status"}}`,
    /// read leniently.
    fn decode_error(
        &self,
        status: u16,
        headers: &dyn router_canonical::HeaderSource,
        body: &[u8],
    ) -> SupplierError {
        let error = serde_json::from_slice::<wire::ErrorBody>(body)
            .map(|body| body.error)
            .unwrap_or_default();
        let mut failure = SupplierFailure::from_reply(status, headers);
        failure.kind = error.status;
        failure.code = error.code.map(|c| c.to_string());
        failure.message = error.message;
        SupplierError::Reported(failure)
    }

    fn stream_decoder(&self) -> Box<dyn SupplierStreamDecoder> {
        Box::new(StreamDecoder::new(self.require_usage))
    }
}
