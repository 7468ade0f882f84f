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
use router_messages::{
    ApiError, ClientCodec, ErrorReply, HeaderSource, MessagesSupplier, ReplyContext, Request,
    StreamContext, StreamTranslator, SupplierCodec, SupplierError, SupplierTarget,
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
        let target = SupplierTarget::new(&self.upstream_model)
            .with_default_max_output_tokens(Some(self.default_max_tokens));
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
        let reply = ReplyContext::new(id, &call.request.model, created);
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

    /// A translator of Anthropic's SSE stream into the caller's Chat
    /// chunks: feed it the supplier's bytes as they arrive.
    pub fn stream_translator(
        &self,
        call: Call,
        id: &str,
        created: i64,
    ) -> StreamTranslator<router_chat::StreamEncoder> {
        let stream = StreamContext::new(id, call.request.model.clone(), created);
        StreamTranslator::new(&self.messages, self.chat.stream_encoder(stream, call.extra))
    }

    /// Anthropic's SSE stream, re-encoded as the caller's Chat chunks, taken
    /// whole. If it fails, the Chat stream written so far (ending with
    /// Chat's error frame) comes with the supplier's error.
    pub fn stream(
        &self,
        call: Call,
        id: &str,
        created: i64,
        sse: &[u8],
    ) -> Result<Vec<u8>, (Vec<u8>, BridgeError)> {
        let mut translator = self.stream_translator(call, id, created);
        let mut out = Vec::new();
        let result = translator
            .feed(sse, &mut out)
            .and_then(|()| translator.finish(&mut out));
        match result {
            Ok(()) => Ok(out),
            Err(error) => Err((out, BridgeError::Supplier(error))),
        }
    }

    /// The Chat error envelope for a caller.
    pub fn error_body(&self, error: &ApiError) -> Vec<u8> {
        self.chat.error_body(error)
    }
}
