//! The OpenAI Responses endpoint (any path ending in `/responses`):
//! [`Responses`] plugs the Responses wire format into the shared script
//! player.

use bytes::Bytes;
use serde_json::Value;

use crate::endpoint::{EventStream, WireProtocol};
use crate::openai_error;
use crate::reply_identity::ReplyIdentity;
use crate::responses_reply::{self, INVALID_JSON_BODY, ResponsesRequest, SSE_MALFORMED};
use crate::script::MockReply;
use crate::sse::typed_event;

/// OpenAI Responses: named `response.*` events (`event:` = `data.type`)
/// numbered by `sequence_number`, ending with `response.completed` or
/// `response.incomplete`.
#[derive(Debug)]
pub(crate) struct Responses;

impl WireProtocol for Responses {
    type Request = ResponsesRequest;

    const INVALID_JSON_BODY: &'static [u8] = INVALID_JSON_BODY;
    const MALFORMED_EVENT: &'static [u8] = SSE_MALFORMED;

    fn read_request(body: &Value) -> ResponsesRequest {
        ResponsesRequest::from_body(body)
    }

    fn model(request: &ResponsesRequest) -> &str {
        &request.model
    }

    fn streams(request: &ResponsesRequest) -> bool {
        request.stream
    }

    fn reply_body(
        reply: &MockReply,
        request: &ResponsesRequest,
        identity: &ReplyIdentity,
    ) -> Value {
        responses_reply::response_json(reply, request, identity)
    }

    fn reply_events(
        reply: &MockReply,
        request: &ResponsesRequest,
        identity: &ReplyIdentity,
    ) -> EventStream {
        let mut events: Vec<Bytes> = responses_reply::stream_events(reply, request, identity)
            .iter()
            .map(typed_event)
            .collect();
        let terminal = events.pop().into_iter().collect();
        EventStream { events, terminal }
    }

    fn stream_error_event(identity: &ReplyIdentity, events_sent: usize, message: &str) -> Bytes {
        typed_event(&responses_reply::failed_event(
            identity,
            events_sent,
            message,
        ))
    }

    fn error_body(status: u16, message: &str) -> Value {
        openai_error::error_body(status, message)
    }
}
