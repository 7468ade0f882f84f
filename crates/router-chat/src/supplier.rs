//! The supplier side of Chat Completions: what a gateway sends a Chat
//! supplier, and what that supplier answers ([`ChatSupplier`]).

mod compat;
mod error;
mod request;
mod response;
mod stream;

pub use compat::{ChatCompat, CompatChatSupplier};
pub use error::DecodeError;
pub use stream::StreamDecoder;

use router_canonical::codec::{
    SupplierCodec, SupplierError, SupplierStreamDecoder, SupplierTarget,
};
use router_canonical::{ApiError, Protocol, Request, Response};

/// The Chat Completions supplier codec: encodes canonical requests for a
/// Chat supplier and decodes its replies, streams and error replies.
///
/// [`Default`] follows the protocol, where `usage` is optional: a reply or
/// stream without it decodes with zero usage. A gateway that bills by usage
/// sets `require_usage` so such a reply is invalid instead.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChatSupplier {
    /// Refuse a reply (or stream) that reports no usage as invalid.
    pub require_usage: bool,
}

impl ChatSupplier {
    /// The protocol's defaults: a reply without usage reads as zero usage.
    pub const fn new() -> Self {
        ChatSupplier {
            require_usage: false,
        }
    }

    /// This codec refusing (`true`) or accepting a reply without usage.
    pub const fn with_require_usage(mut self, require_usage: bool) -> Self {
        self.require_usage = require_usage;
        self
    }
}

impl ChatSupplier {
    /// Read a complete reply, with the crate's typed error
    /// ([`SupplierCodec::decode_response`] sorts it into a [`SupplierError`]).
    pub fn decode_reply(&self, body: &[u8]) -> Result<Response, DecodeError> {
        response::response(body, self.require_usage)
    }
}

impl SupplierCodec for ChatSupplier {
    fn protocol(&self) -> Protocol {
        Protocol::Chat
    }

    fn path(&self) -> &'static str {
        "/chat/completions"
    }

    /// `target.model` replaces the model; a streaming request asks for the
    /// usage chunk (`stream_options.include_usage`). Fails with
    /// `unsupported_conversion` when the request holds what Chat cannot
    /// carry (an unresolved upload, another protocol's opaque part).
    fn encode_request(
        &self,
        request: &Request,
        target: &SupplierTarget<'_>,
    ) -> Result<Vec<u8>, ApiError> {
        request.refuse_native_only(self.protocol())?;
        request.refuse_several_choices()?;
        request::request(request, target.model)
    }

    /// `authorization: Bearer <key>` when there is a key.
    fn headers(&self, _request: &Request, api_key: Option<&str>) -> Vec<(&'static str, String)> {
        router_canonical::openai_error::bearer_auth(api_key)
    }

    fn decode_response(&self, body: &[u8]) -> Result<Response, SupplierError> {
        self.decode_reply(body).map_err(SupplierError::from)
    }

    /// The OpenAI error shape, `{"error": {"message", "type", "code"}}`.
    fn decode_error(
        &self,
        status: u16,
        headers: &dyn router_canonical::HeaderSource,
        body: &[u8],
    ) -> SupplierError {
        SupplierError::Reported(router_canonical::openai_error::supplier_failure(
            status, headers, body,
        ))
    }

    fn stream_decoder(&self) -> Box<dyn SupplierStreamDecoder> {
        Box::new(StreamDecoder::new(self))
    }
}
