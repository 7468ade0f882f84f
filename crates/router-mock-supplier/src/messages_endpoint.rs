//! The Anthropic Messages endpoint (any path ending in `/messages`):
//! [`Messages`] plugs the Messages wire format into the shared script player.

use bytes::Bytes;
use serde_json::Value;

use crate::endpoint::{EventStream, WireProtocol};
use crate::messages_reply::{self, INVALID_JSON_BODY, MessagesRequest, SSE_MALFORMED};
use crate::reply_identity::ReplyIdentity;
use crate::script::MockReply;
use crate::sse::typed_event;

/// Anthropic Messages: named events (`event:` = `data.type`) ending with
/// `message_stop`.
#[derive(Debug)]
pub(crate) struct Messages;

impl WireProtocol for Messages {
    type Request = MessagesRequest;

    const INVALID_JSON_BODY: &'static [u8] = INVALID_JSON_BODY;
    const MALFORMED_EVENT: &'static [u8] = SSE_MALFORMED;

    fn read_request(body: &Value) -> MessagesRequest {
        MessagesRequest::from_body(body)
    }

    fn model(request: &MessagesRequest) -> &str {
        &request.model
    }

    fn streams(request: &MessagesRequest) -> bool {
        request.stream
    }

    fn reply_body(reply: &MockReply, request: &MessagesRequest, identity: &ReplyIdentity) -> Value {
        messages_reply::message_json(reply, request, identity)
    }

    fn reply_events(
        reply: &MockReply,
        request: &MessagesRequest,
        identity: &ReplyIdentity,
    ) -> EventStream {
        EventStream {
            events: messages_reply::stream_events(reply, request, identity)
                .iter()
                .map(typed_event)
                .collect(),
            terminal: vec![typed_event(&messages_reply::message_stop())],
        }
    }

    fn stream_error_event(_identity: &ReplyIdentity, _events_sent: usize, message: &str) -> Bytes {
        typed_event(&messages_reply::stream_error(message))
    }

    fn error_body(status: u16, message: &str) -> Value {
        messages_reply::error_body(status, message)
    }
}
