//! Claude on Amazon Bedrock (`…/model/{modelId}/invoke` and
//! `…/invoke-with-response-stream`), written from AWS's published
//! `InvokeModel` reference: the Anthropic Messages body without `model`
//! and `stream`, with `anthropic_version: "bedrock-2023-05-31"`; the reply
//! a Messages `message`; the stream AWS event stream, each `chunk` event's
//! payload `{"bytes": base64 of one Messages event}`; errors
//! `{"message"}`. Every request must carry a valid Signature Version 4 of
//! the mock's credentials ([`crate::MOCK_AWS_ACCESS_KEY_ID`]): otherwise
//! 403, as Bedrock answers. A body with `model`, `stream` or another
//! `anthropic_version` is 400 (`Malformed input request`).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use http::HeaderMap;
use serde_json::{Value, json};

use crate::aws::{
    MALFORMED_MESSAGE, json_event, model_in_path, signature_refusal, stream_exception,
};
use crate::endpoint::{EventStream, WireProtocol};
use crate::messages_reply::{self, MessagesRequest};
use crate::reply_identity::ReplyIdentity;
use crate::script::MockReply;

#[derive(Debug)]
pub(crate) struct Bedrock;

/// Whether `path` is a Bedrock InvokeModel endpoint.
pub(crate) fn is_bedrock_path(path: &str) -> bool {
    path.contains("/model/")
        && (path.ends_with("/invoke") || path.ends_with("/invoke-with-response-stream"))
}

fn chunk(event: &Value) -> Bytes {
    let payload = json!({"bytes": STANDARD.encode(event.to_string()), "p": "abcdefgh"});
    json_event("chunk", &payload)
}

impl WireProtocol for Bedrock {
    type Request = MessagesRequest;

    const INVALID_JSON_BODY: &'static [u8] = b"{\"id\": \"msg_bdrk\", this is not json";
    const MALFORMED_EVENT: &'static [u8] = MALFORMED_MESSAGE;

    fn read_request(body: &Value) -> MessagesRequest {
        MessagesRequest::from_body(body)
    }

    fn read_request_at(body: &Value, path: &str, _host: Option<&str>) -> MessagesRequest {
        let mut request = MessagesRequest::from_body(body);
        request.model = model_in_path(path);
        request.stream = path.ends_with("/invoke-with-response-stream");
        request
    }

    fn check_request(
        headers: &HeaderMap,
        path: &str,
        query: Option<&str>,
        body: &Bytes,
    ) -> Option<(u16, Value)> {
        if let Some(refusal) = signature_refusal(headers, path, query, body) {
            return Some(refusal);
        }
        let parsed: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let malformed = if parsed.get("anthropic_version").and_then(Value::as_str)
            != Some("bedrock-2023-05-31")
        {
            Some("#: required key [anthropic_version] not found or not bedrock-2023-05-31")
        } else if parsed.get("model").is_some() {
            Some("#: extraneous key [model] is not permitted")
        } else if parsed.get("stream").is_some() {
            Some("#: extraneous key [stream] is not permitted")
        } else {
            None
        };
        malformed.map(|m| (400, json!({"message": format!("Malformed input request: {m}, please reformat your input and try again.")})))
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
        let usage = crate::usage_estimate::effective_usage(reply, request.prompt_chars);
        let mut stop = messages_reply::message_stop();
        stop["amazon-bedrock-invocationMetrics"] = json!({
            "inputTokenCount": usage.prompt_tokens,
            "outputTokenCount": usage.completion_tokens,
            "invocationLatency": 100,
            "firstByteLatency": 20,
        });
        EventStream {
            events: messages_reply::stream_events(reply, request, identity)
                .iter()
                .map(chunk)
                .collect(),
            terminal: vec![chunk(&stop)],
        }
    }

    fn stream_error_event(_identity: &ReplyIdentity, _events_sent: usize, message: &str) -> Bytes {
        stream_exception(message)
    }

    fn error_body(_status: u16, message: &str) -> Value {
        json!({"message": message})
    }
}
