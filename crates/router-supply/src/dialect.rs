//! What differs between supplier protocols: the path, the auth and version
//! headers, and which wire crate encodes the request and decodes the reply.
//! Everything else about an attempt (timeouts, status classification,
//! stream prebuffering) is shared in `attempt.rs`.

use router_canonical::sse::Frame;
use router_canonical::{ApiError, Protocol, Request, Response, StreamEvent};
use router_core::Route;

/// The Anthropic API version the router speaks to Messages suppliers.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// One supplier protocol. `Completions` never reaches a route (the catalog
/// refuses it), so it has no dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Chat,
    Messages,
    Responses,
}

impl Dialect {
    pub(crate) fn of(protocol: Protocol) -> Option<Dialect> {
        match protocol {
            Protocol::Chat => Some(Dialect::Chat),
            Protocol::Messages => Some(Dialect::Messages),
            Protocol::Responses => Some(Dialect::Responses),
            Protocol::Completions => None,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Dialect::Chat => "chat",
            Dialect::Messages => "messages",
            Dialect::Responses => "responses",
        }
    }

    pub(crate) fn path(self) -> &'static str {
        match self {
            Dialect::Chat => "/chat/completions",
            Dialect::Messages => "/messages",
            Dialect::Responses => "/responses",
        }
    }

    pub(crate) fn encode(self, request: &Request, route: &Route) -> Result<Vec<u8>, ApiError> {
        match self {
            Dialect::Chat => router_chat::encode_request(request, &route.upstream_model),
            Dialect::Messages => router_messages::encode_request(
                request,
                &route.upstream_model,
                route.max_output_tokens,
            ),
            Dialect::Responses => router_responses::encode_request(request, &route.upstream_model),
        }
    }

    /// Authentication and protocol headers for one request.
    pub(crate) fn headers(
        self,
        request: &Request,
        route: &Route,
        mut builder: reqwest::RequestBuilder,
    ) -> reqwest::RequestBuilder {
        let key = route.supplier.api_key.as_deref();
        match self {
            Dialect::Chat | Dialect::Responses => {
                if let Some(key) = key {
                    builder = builder.bearer_auth(key);
                }
            }
            Dialect::Messages => {
                builder = builder.header("anthropic-version", ANTHROPIC_VERSION);
                if let Some(key) = key {
                    builder = builder.header("x-api-key", key);
                }
                // Betas travel only with a native request, and routing has
                // already checked each against this route's allowlist (D-04).
                if let Some(native) = &request.native
                    && native.protocol == Some(Protocol::Messages)
                    && !native.betas.is_empty()
                {
                    builder = builder.header("anthropic-beta", native.betas.join(","));
                }
            }
        }
        builder
    }

    pub(crate) fn decode_response(self, body: &[u8]) -> Result<Response, String> {
        match self {
            Dialect::Chat => router_chat::decode_response(body).map_err(|e| e.to_string()),
            Dialect::Messages => router_messages::decode_response(body).map_err(|e| e.to_string()),
            Dialect::Responses => {
                router_responses::decode_response(body).map_err(|e| e.to_string())
            }
        }
    }

    pub(crate) fn stream_decoder(self) -> StreamDecoder {
        match self {
            Dialect::Chat => StreamDecoder::Chat(router_chat::StreamDecoder::new()),
            Dialect::Messages => StreamDecoder::Messages(router_messages::StreamDecoder::new()),
            Dialect::Responses => StreamDecoder::Responses(router_responses::StreamDecoder::new()),
        }
    }
}

/// A supplier stream decoder of one dialect.
pub(crate) enum StreamDecoder {
    Chat(router_chat::StreamDecoder),
    Messages(router_messages::StreamDecoder),
    Responses(router_responses::StreamDecoder),
}

impl StreamDecoder {
    pub(crate) fn decode(&mut self, frame: &Frame) -> Result<Vec<StreamEvent>, String> {
        match self {
            StreamDecoder::Chat(d) => d.decode(frame).map_err(|e| e.to_string()),
            StreamDecoder::Messages(d) => d.decode(frame).map_err(|e| e.to_string()),
            StreamDecoder::Responses(d) => d.decode(frame).map_err(|e| e.to_string()),
        }
    }

    pub(crate) fn is_finished(&self) -> bool {
        match self {
            StreamDecoder::Chat(d) => d.is_finished(),
            StreamDecoder::Messages(d) => d.is_finished(),
            StreamDecoder::Responses(d) => d.is_finished(),
        }
    }
}
