//! The supplier side of the Responses protocol: [`ResponsesSupplier`]
//! encodes canonical requests for a Responses supplier and decodes its
//! replies, streams and error replies.

mod error;
mod request;
mod response;
mod stream;

pub use error::DecodeError;
pub use stream::StreamDecoder;

use router_canonical::openai_error::supplier_failure;
use router_canonical::{
    ApiError, Protocol, Request, Response, SupplierCodec, SupplierError, SupplierStreamDecoder,
    SupplierTarget,
};

/// The Responses protocol as a gateway speaks it to a supplier
/// (`POST {base}/responses`).
///
/// Requests are always sent with `"store": false`. What Responses cannot
/// carry (stop sequences, penalties, a `thinking` configuration, an
/// unresolved upload, another protocol's opaque part, ...) is refused with
/// `unsupported_conversion` rather than dropped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResponsesSupplier {
    /// Whether a reply or stream without usage is invalid. `false` (the
    /// default, as the protocol allows it) reads missing usage as zero; a
    /// gateway that bills by usage sets `true`.
    pub require_usage: bool,
}

impl ResponsesSupplier {
    /// The protocol's defaults: a reply without usage reads as zero usage.
    pub const fn new() -> Self {
        ResponsesSupplier {
            require_usage: false,
        }
    }

    /// This codec refusing (`true`) or accepting a reply without usage.
    pub const fn with_require_usage(mut self, require_usage: bool) -> Self {
        self.require_usage = require_usage;
        self
    }
}

impl ResponsesSupplier {
    /// Read a complete reply, with the decoder's own typed error (which
    /// [`SupplierCodec::decode_response`] sorts into a [`SupplierError`]).
    /// A reply with implausible usage, with an output item or content part
    /// of an unknown type, or with a status other than
    /// `completed`/`incomplete` is invalid; `status: "failed"` is the
    /// supplier's own error.
    pub fn decode_reply(&self, body: &[u8]) -> Result<Response, DecodeError> {
        response::response(body, self.require_usage)
    }

    /// A stream decoder of the concrete type, with its typed errors
    /// ([`StreamDecoder::decode_frame`]).
    pub fn decoder(&self) -> StreamDecoder {
        StreamDecoder::new(self.require_usage)
    }
}

impl SupplierCodec for ResponsesSupplier {
    fn protocol(&self) -> Protocol {
        Protocol::Responses
    }

    fn path(&self) -> &'static str {
        "/responses"
    }

    /// The JSON body for the supplier, with `target.model` as the model.
    /// Responses needs no output cap, so `default_max_output_tokens` is not
    /// used.
    fn encode_request(
        &self,
        request: &Request,
        target: &SupplierTarget<'_>,
    ) -> Result<Vec<u8>, ApiError> {
        request.refuse_native_only(self.protocol())?;
        request.refuse_several_choices()?;
        request::request(request, target)
    }

    /// `authorization: Bearer <key>` when there is a key.
    fn headers(&self, _request: &Request, api_key: Option<&str>) -> Vec<(&'static str, String)> {
        router_canonical::openai_error::bearer_auth(api_key)
    }

    fn decode_response(&self, body: &[u8]) -> Result<Response, SupplierError> {
        self.decode_reply(body).map_err(SupplierError::from)
    }

    /// An OpenAI-shaped error reply (`{"error": {"type", "code",
    /// "message"}}`), read leniently.
    fn decode_error(
        &self,
        status: u16,
        headers: &dyn router_canonical::HeaderSource,
        body: &[u8],
    ) -> SupplierError {
        SupplierError::Reported(supplier_failure(status, headers, body))
    }

    fn stream_decoder(&self) -> Box<dyn SupplierStreamDecoder> {
        Box::new(self.decoder())
    }
}
