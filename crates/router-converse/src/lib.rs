#![warn(unreachable_pub)]
//! Amazon Bedrock's Converse API (`POST /model/{modelId}/converse` and
//! `/converse-stream`) as a supplier dialect: [`ConverseSupplier`]. One wire
//! for every Bedrock model (Claude, Llama, Mistral, Nova, ...); requests are
//! SigV4-signed by the route's supplier settings, streams are AWS event
//! stream (`messageStart`, `contentBlockStart`/`Delta`/`Stop`,
//! `messageStop`, then `metadata` with the usage).
//!
//! Supplier only. `request.rs` (the body, refusing by field what Converse
//! cannot carry), `response.rs` (a reply, usage, stop reasons),
//! `stream.rs` (event-stream messages into canonical events), `error.rs`.
//!
//! Usage: Converse's `inputTokens` excludes the cache reads and writes
//! (`cacheReadInputTokens`, `cacheWriteInputTokens`); the canonical input
//! count includes them.

mod error;
mod request;
mod response;
mod stream;

pub use error::DecodeError;
pub use stream::StreamDecoder;

/// The canonical model this crate translates to and from, whole.
pub use router_canonical as canonical;
/// The names every wire crate exports at the same paths: `sse`,
/// `ErrorCode`, the codec traits, stream and error types.
pub use router_canonical::surface::*;

use router_canonical::encode_path_segment;
use serde::Deserialize;

/// The Bedrock Converse dialect.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConverseSupplier {
    /// Whether a reply or stream without usage is invalid (the gateway
    /// bills by usage, so it turns this on).
    pub require_usage: bool,
}

impl SupplierCodec for ConverseSupplier {
    fn protocol(&self) -> Protocol {
        Protocol::BedrockConverse
    }

    /// The non-streaming path with the model left open; see `request_path`.
    fn path(&self) -> &'static str {
        "/model/{model}/converse"
    }

    fn request_path(&self, target: &SupplierTarget<'_>, stream: bool) -> String {
        let action = if stream {
            "converse-stream"
        } else {
            "converse"
        };
        format!("/model/{}/{action}", encode_path_segment(target.model))
    }

    fn stream_framing(&self) -> StreamFraming {
        StreamFraming::AwsEventStream
    }

    fn encode_request(
        &self,
        request: &Request,
        target: &SupplierTarget<'_>,
    ) -> Result<Vec<u8>, ApiError> {
        request.refuse_native_only(self.protocol())?;
        request.refuse_several_choices()?;
        request::encode(request, target)
    }

    /// None of the dialect's own: authentication is the supplier's (SigV4).
    fn headers(&self, _request: &Request, _api_key: Option<&str>) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    fn decode_response(&self, body: &[u8]) -> Result<Response, SupplierError> {
        response::decode(body, self.require_usage).map_err(SupplierError::from)
    }

    /// Bedrock's error body, `{"message": ...}`, read leniently.
    fn decode_error(
        &self,
        status: u16,
        headers: &dyn router_canonical::HeaderSource,
        body: &[u8],
    ) -> SupplierError {
        #[derive(Deserialize, Default)]
        struct ErrorBody {
            #[serde(default, alias = "Message")]
            message: Option<String>,
        }
        let body: ErrorBody = serde_json::from_slice(body).unwrap_or_default();
        let mut failure = SupplierFailure::from_reply(status, headers);
        failure.kind = router_canonical::eventstream::amzn_error_type(headers);
        failure.message = body.message;
        SupplierError::Reported(failure)
    }

    fn stream_decoder(&self) -> Box<dyn SupplierStreamDecoder> {
        Box::new(StreamDecoder::new(self.require_usage))
    }
}
