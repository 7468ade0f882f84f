//! The supplier side of Messages: the request body sent to a Messages
//! supplier, and how its replies, streams and error replies are read.

mod bedrock;
mod error;
mod request;
mod response;
mod stream;

pub use bedrock::{BEDROCK_ANTHROPIC_VERSION, BedrockMessagesSupplier, BedrockStreamDecoder};
pub use error::DecodeError;
pub use stream::StreamDecoder;

use crate::convert::ANTHROPIC_VERSION;
use crate::wire::event::ErrorObject;
use router_canonical::{
    ApiError, Protocol, Request, Response, SupplierCodec, SupplierError, SupplierFailure,
    SupplierStreamDecoder, SupplierTarget,
};

/// The Messages protocol as a supplier speaks it: `POST {base}/messages`.
///
/// Encoding works for requests parsed from Messages clients and converted
/// from other protocols alike; what Messages cannot carry losslessly is an
/// `unsupported_conversion` [`ApiError`]. Messages requires `max_tokens`:
/// a request without an output limit takes
/// [`SupplierTarget::default_max_output_tokens`], and fails without one.
///
/// Decoding adds Anthropic's cache reads and writes to the input count
/// (the canonical count includes them), and turns every failure into a
/// [`SupplierError`] whose kind says what a caller may do next; the typed
/// [`DecodeError`] is its source.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MessagesSupplier {
    /// Whether a reply or stream without token counts is invalid. Off (the
    /// default), missing counts read as zero; a gateway that bills by usage
    /// turns it on so such a reply is refused.
    pub require_usage: bool,
}

impl MessagesSupplier {
    /// The protocol's defaults: a reply without usage reads as zero usage.
    pub const fn new() -> Self {
        MessagesSupplier {
            require_usage: false,
        }
    }

    /// This codec refusing (`true`) or accepting a reply without usage.
    pub const fn with_require_usage(mut self, require_usage: bool) -> Self {
        self.require_usage = require_usage;
        self
    }
}

impl SupplierCodec for MessagesSupplier {
    fn protocol(&self) -> Protocol {
        Protocol::Messages
    }

    fn path(&self) -> &'static str {
        "/messages"
    }

    /// The JSON body for a Messages supplier, under `target.model`.
    ///
    /// Fails with `unsupported_conversion` when the request holds what
    /// Messages cannot carry (an unresolved upload, a one-hour cache marker
    /// from another protocol, tool arguments that are not an object, a
    /// temperature above 1, penalties, `json_object` output, another
    /// protocol's opaque part). Documented hints are dropped instead: an
    /// image's `detail`, `seed`, `reasoning.summary`, unsigned thinking in a
    /// converted history, a JSON schema's name and `strict: false`. With
    /// the target's `prompt_cache_marker` and no marker anywhere, the last
    /// block of the last message gets a five-minute `cache_control`; set it
    /// only for models that honour it, as the encoder cannot tell. A request
    /// asking for other than one choice (`Sampling::choices`) is refused.
    fn encode_request(
        &self,
        request: &Request,
        target: &SupplierTarget<'_>,
    ) -> Result<Vec<u8>, ApiError> {
        request.refuse_native_only(self.protocol())?;
        request.refuse_several_choices()?;
        request::request(request, target)
    }

    /// `anthropic-version: 2023-06-01`, `x-api-key` when there is a key, and
    /// `anthropic-beta` with the beta identifiers of a request that came in
    /// over Messages (a converted request has none). Whether each
    /// identifier may reach this supplier is the caller's decision.
    fn headers(&self, request: &Request, api_key: Option<&str>) -> Vec<(&'static str, String)> {
        let mut headers = vec![("anthropic-version", ANTHROPIC_VERSION.to_owned())];
        if let Some(key) = api_key {
            headers.push(("x-api-key", key.to_owned()));
        }
        if let Some(native) = &request.native
            && native.protocol == Some(Protocol::Messages)
            && !native.betas.is_empty()
        {
            headers.push(("anthropic-beta", native.betas.join(",")));
        }
        headers
    }

    /// Read a `message` object. A reply with a block type the canonical
    /// model cannot represent is [`SupplierError::Unsupported`]; an error
    /// object in its place is [`SupplierError::Reported`]; unknown members
    /// are dropped.
    fn decode_response(&self, body: &[u8]) -> Result<Response, SupplierError> {
        response::response(body, self.require_usage).map_err(SupplierError::from)
    }

    /// Read `{"type": "error", "error": {"type", "message"}}` leniently: a
    /// body in another shape still reports the failure, without detail.
    fn decode_error(
        &self,
        status: u16,
        headers: &dyn router_canonical::HeaderSource,
        body: &[u8],
    ) -> SupplierError {
        let ErrorObject { kind, message, .. } = response::error_object(body);
        let mut failure = SupplierFailure::from_reply(status, headers);
        failure.kind = kind;
        failure.message = message;
        SupplierError::Reported(failure)
    }

    fn stream_decoder(&self) -> Box<dyn SupplierStreamDecoder> {
        Box::new(StreamDecoder::new(self))
    }
}
