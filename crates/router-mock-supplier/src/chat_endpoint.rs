//! The Chat Completions endpoint (any path ending in `/chat/completions`):
//! [`Chat`] plugs the chat wire format into the shared script player.

use bytes::Bytes;
use serde_json::Value;

use crate::chat_reply::{self, ChatRequest, INVALID_JSON_BODY, SSE_DONE, SSE_MALFORMED};
use crate::endpoint::{EventStream, WireProtocol};
use crate::openai_error;
use crate::reply_identity::ReplyIdentity;
use crate::script::MockReply;
use crate::sse::data_event;

/// OpenAI Chat Completions: unnamed `data:` events ending with `[DONE]`.
#[derive(Debug)]
pub(crate) struct Chat;

impl WireProtocol for Chat {
    type Request = ChatRequest;

    const INVALID_JSON_BODY: &'static [u8] = INVALID_JSON_BODY;
    const MALFORMED_EVENT: &'static [u8] = SSE_MALFORMED;

    fn read_request(body: &Value) -> ChatRequest {
        ChatRequest::from_body(body)
    }

    /// Azure's gate for a deployment path (`crate::azure`).
    fn check_request(
        headers: &http::HeaderMap,
        path: &str,
        query: Option<&str>,
        _body: &Bytes,
    ) -> Option<(u16, Value)> {
        crate::azure::refusal(headers, path, query)
    }

    fn model(request: &ChatRequest) -> &str {
        &request.model
    }

    fn streams(request: &ChatRequest) -> bool {
        request.stream
    }

    fn reply_body(reply: &MockReply, request: &ChatRequest, identity: &ReplyIdentity) -> Value {
        chat_reply::completion_json(reply, request, identity)
    }

    fn reply_events(
        reply: &MockReply,
        request: &ChatRequest,
        identity: &ReplyIdentity,
    ) -> EventStream {
        EventStream {
            events: chat_reply::stream_chunks(reply, request, identity)
                .iter()
                .map(data_event)
                .collect(),
            terminal: vec![Bytes::from_static(SSE_DONE)],
        }
    }

    fn stream_error_event(_identity: &ReplyIdentity, _events_sent: usize, message: &str) -> Bytes {
        chat_reply::stream_error_event(message)
    }

    fn error_body(status: u16, message: &str) -> Value {
        openai_error::error_body(status, message)
    }

    fn mock_error_body(message: &str) -> Value {
        openai_error::envelope(message, "mock_supplier_error")
    }
}
