//! What a service outside the gateway writes to translate Chat Completions
//! to Anthropic Messages with the wire crates: the Chat **client** codec
//! parses what its caller sent and renders what it gets back; the Messages
//! **supplier** codec encodes the request for Anthropic and decodes the
//! reply, stream and errors. The canonical types in between belong to
//! neither.
//!
//! No HTTP here on purpose: bytes in, bytes out, so the example runs as a
//! test. A real service sends [`Bridge::upstream_request`]'s body with the
//! headers from [`Bridge::upstream_headers`] to `{base}{path}`.

use router_chat::{ChatClient, ChatExtra};
use router_messages::sse::Decoder;
use router_messages::{
    ApiError, ClientCodec, ClientStreamEncoder, ErrorReply, HeaderSource, MessagesSupplier,
    ReplyContext, Request, StreamContext, SupplierCodec, SupplierError, SupplierTarget,
};

/// A Chat front for one Messages model.
pub struct Bridge {
    chat: ChatClient,
    messages: MessagesSupplier,
    /// Anthropic's name for the model.
    pub upstream_model: String,
    /// The `max_tokens` Messages requires when the Chat caller set none.
    pub default_max_tokens: u32,
}

/// A parsed Chat call, ready to send upstream.
pub struct Call {
    pub request: Request,
    extra: ChatExtra,
}

/// Why a call failed, in the terms a caller acts on.
#[derive(Debug)]
pub enum BridgeError {
    /// The caller's request is invalid or cannot be carried by Messages;
    /// answer with [`Bridge::error_body`] and the error's status.
    Client(ApiError),
    /// Anthropic failed or answered something unreadable.
    Supplier(SupplierError),
}

impl Bridge {
    pub fn new(upstream_model: impl Into<String>, default_max_tokens: u32) -> Self {
        Bridge {
            chat: ChatClient::default(),
            // Billing nothing, this service accepts replies without usage.
            messages: MessagesSupplier::default(),
            upstream_model: upstream_model.into(),
            default_max_tokens,
        }
    }

    /// Validate a Chat body. Headers are not needed by the Chat codec.
    pub fn parse(&self, chat_body: &[u8]) -> Result<Call, BridgeError> {
        let (request, extra) = self
            .chat
            .parse_request(&(), chat_body)
            .map_err(BridgeError::Client)?;
        Ok(Call { request, extra })
    }

    /// The Messages body for Anthropic.
    pub fn upstream_request(&self, call: &Call) -> Result<Vec<u8>, BridgeError> {
        let target = SupplierTarget {
            model: &self.upstream_model,
            default_max_output_tokens: Some(self.default_max_tokens),
        };
        self.messages
            .encode_request(&call.request, &target)
            .map_err(BridgeError::Client)
    }

    /// Path and headers of the upstream call.
    pub fn upstream_headers(
        &self,
        call: &Call,
        api_key: &str,
    ) -> (&'static str, Vec<(&'static str, String)>) {
        (
            self.messages.path(),
            self.messages.headers(&call.request, Some(api_key)),
        )
    }

    /// Anthropic's complete reply as the caller's `chat.completion` JSON.
    pub fn reply(
        &self,
        call: &Call,
        id: &str,
        created: i64,
        body: &[u8],
    ) -> Result<Vec<u8>, BridgeError> {
        let response = self
            .messages
            .decode_response(body)
            .map_err(BridgeError::Supplier)?;
        let reply = ReplyContext {
            id,
            model: &call.request.model,
            created,
            cost: None,
        };
        Ok(self.chat.encode_response(&response, &reply, &call.extra))
    }

    /// An error status from Anthropic with its headers, classified (its
    /// category, and the wait its `Retry-After` asks for).
    pub fn upstream_error(
        &self,
        status: u16,
        headers: &dyn HeaderSource,
        body: &[u8],
    ) -> BridgeError {
        BridgeError::Supplier(self.messages.decode_error(status, headers, body))
    }

    /// What to answer the caller for a supplier failure: status,
    /// `Retry-After` and the Chat error envelope, in one call.
    pub fn supplier_error_reply(&self, error: &SupplierError) -> ErrorReply {
        self.chat.supplier_error_reply(error)
    }

    /// Anthropic's SSE stream, re-encoded as the caller's Chat chunks. A
    /// real service feeds bytes as they arrive; this one takes them whole.
    pub fn stream(
        &self,
        call: Call,
        id: &str,
        created: i64,
        sse: &[u8],
    ) -> Result<Vec<u8>, BridgeError> {
        let mut frames = Vec::new();
        Decoder::default()
            .feed(sse, &mut frames)
            .map_err(|e| BridgeError::Supplier(SupplierError::invalid(e)))?;
        let mut decoder = self.messages.stream_decoder();
        let stream = StreamContext {
            id: id.to_owned(),
            model: call.request.model.clone(),
            created,
        };
        let mut encoder = self.chat.stream_encoder(stream, call.extra);
        let mut out = Vec::new();
        for frame in &frames {
            match decoder.decode(frame) {
                Ok(events) => events
                    .iter()
                    .for_each(|event| encoder.event(event, &mut out)),
                Err(error) => {
                    // The stream already started: end it with Chat's error frame.
                    encoder.error(
                        &ApiError::new(
                            router_chat::ErrorCode::UpstreamError,
                            "the upstream failed",
                        ),
                        &mut out,
                    );
                    return Err(BridgeError::Supplier(error));
                }
            }
        }
        Ok(out)
    }

    /// The Chat error envelope for a caller.
    pub fn error_body(&self, error: &ApiError) -> Vec<u8> {
        self.chat.error_body(error)
    }
}
