//! Starting a mock, sending requests of each protocol, reading SSE bodies.

pub(crate) use crate::common::{assert_connection_cut, client, start};
use router_mock_supplier::MockSupplier;
use serde_json::{Value, json};

/// The three protocols the mock speaks, for tests that run over all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    Chat,
    Messages,
    Responses,
}

pub(crate) const ALL: [Protocol; 3] = [Protocol::Chat, Protocol::Messages, Protocol::Responses];

impl Protocol {
    pub(crate) fn path(self) -> &'static str {
        match self {
            Protocol::Chat => "/chat/completions",
            Protocol::Messages => "/messages",
            Protocol::Responses => "/responses",
        }
    }

    /// A minimal request body of this protocol asking "hi".
    pub(crate) fn body(self, model: &str, stream: bool) -> Value {
        match self {
            Protocol::Chat => json!({
                "model": model,
                "stream": stream,
                "stream_options": {"include_usage": true},
                "messages": [{"role": "user", "content": "hi"}],
            }),
            Protocol::Messages => json!({
                "model": model,
                "max_tokens": 64,
                "stream": stream,
                "messages": [{"role": "user", "content": "hi"}],
            }),
            Protocol::Responses => json!({
                "model": model,
                "stream": stream,
                "input": "hi",
            }),
        }
    }

    pub(crate) async fn post(self, mock: &MockSupplier, body: &Value) -> reqwest::Response {
        client()
            .post(format!("{}{}", mock.base_url(), self.path()))
            .json(body)
            .send()
            .await
            .unwrap()
    }

    /// The text of a non-streamed reply body.
    pub(crate) fn reply_text(self, body: &Value) -> String {
        let text = match self {
            Protocol::Chat => &body["choices"][0]["message"]["content"],
            Protocol::Messages => &body["content"][0]["text"],
            Protocol::Responses => &body["output"][0]["content"][0]["text"],
        };
        text.as_str().unwrap().to_owned()
    }

    /// Asserts `body` is this protocol's error shape and returns its message.
    pub(crate) fn error_message(self, body: &Value) -> String {
        match self {
            Protocol::Chat | Protocol::Responses => {
                let error = body["error"].as_object().unwrap();
                for key in ["message", "type", "param", "code"] {
                    assert!(error.contains_key(key), "{key} missing: {body}");
                }
                assert!(body.get("type").is_none(), "{body}");
            }
            Protocol::Messages => {
                assert_eq!(body["type"], "error", "{body}");
                let error = body["error"].as_object().unwrap();
                assert_eq!(error.len(), 2, "only type and message: {body}");
                assert!(error["type"].is_string(), "{body}");
            }
        }
        body["error"]["message"].as_str().unwrap().to_owned()
    }
}

/// One server-sent event: its `event:` name (if any) and its `data:`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SseEvent {
    pub(crate) event: Option<String>,
    pub(crate) data: String,
}

impl SseEvent {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or_else(|error| panic!("{error}: {:?}", self.data))
    }
}

/// Splits an SSE body into events; every line must be `event:` or `data:`.
pub(crate) fn sse_events(text: &str) -> Vec<SseEvent> {
    assert!(text.is_empty() || text.ends_with("\n\n"), "{text:?}");
    text.split("\n\n")
        .filter(|frame| !frame.is_empty())
        .map(|frame| {
            let mut event = None;
            let mut data = None;
            for line in frame.lines() {
                if let Some(name) = line.strip_prefix("event: ") {
                    assert!(event.replace(name.to_owned()).is_none(), "{frame}");
                } else if let Some(payload) = line.strip_prefix("data: ") {
                    assert!(data.replace(payload.to_owned()).is_none(), "{frame}");
                } else {
                    panic!("unexpected SSE line {line:?}");
                }
            }
            SseEvent {
                event,
                data: data.unwrap(),
            }
        })
        .collect()
}

/// Parses a named-event stream (Messages, Responses): every event has a
/// name equal to its payload's `type`. Returns the payloads.
pub(crate) fn typed_payloads(text: &str) -> Vec<Value> {
    sse_events(text)
        .iter()
        .map(|event| {
            let payload = event.json();
            assert_eq!(
                event.event.as_deref(),
                payload["type"].as_str(),
                "event name == data.type: {payload}"
            );
            payload
        })
        .collect()
}

pub(crate) fn types(payloads: &[Value]) -> Vec<&str> {
    payloads
        .iter()
        .map(|payload| payload["type"].as_str().unwrap())
        .collect()
}

/// Reads a body chunk by chunk until it ends or fails.
pub(crate) async fn read_body(mut response: reqwest::Response) -> (String, reqwest::Result<()>) {
    let mut received = Vec::new();
    let ended = loop {
        match response.chunk().await {
            Ok(Some(chunk)) => received.extend_from_slice(&chunk),
            Ok(None) => break Ok(()),
            Err(error) => break Err(error),
        }
    };
    (String::from_utf8(received).unwrap(), ended)
}
