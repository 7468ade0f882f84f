//! Google Gemini (`…/models/{model}:generateContent` and
//! `…:streamGenerateContent?alt=sse`), written from Google's published
//! `GenerateContentRequest` / `GenerateContentResponse` reference. The
//! model and the streaming choice are in the path. A request must carry a
//! key (`x-goog-api-key`) or an OAuth token (`authorization: Bearer`, as
//! Vertex AI): without one it is refused with 403 `PERMISSION_DENIED`, as
//! Google refuses unregistered callers.
//!
//! A reply: thinking (`reasoning_content`) as a `thought: true` part, the
//! text, then each tool call as a `functionCall` part (the first carries a
//! `thoughtSignature` when the script has a thinking signature). Usage:
//! `candidatesTokenCount` excludes the thoughts (`thoughtsTokenCount`); the
//! cached tokens are `cachedContentTokenCount`. A stream sends one chunk
//! per word; its last chunk has the `finishReason` and the final usage.

use bytes::Bytes;
use http::HeaderMap;
use serde_json::{Value, json};

use crate::endpoint::{EventStream, WireProtocol};
use crate::reply_identity::ReplyIdentity;
use crate::script::{MockReply, MockUsage};
use crate::sse::{data_event, words};
use crate::usage_estimate::{content_chars_of, effective_usage, text_chars};

#[derive(Debug)]
pub(crate) struct Gemini;

#[derive(Debug, Default)]
pub(crate) struct GeminiRequest {
    model: String,
    stream: bool,
    prompt_chars: usize,
}

/// `…/models/{model}:{method}`: the model (percent-decoded) and whether the
/// method streams.
fn model_and_method(path: &str) -> (String, bool) {
    let tail = path.rsplit("/models/").next().unwrap_or_default();
    let (model, method) = tail.rsplit_once(':').unwrap_or((tail, ""));
    (percent_decode(model), method == "streamGenerateContent")
}

pub(crate) fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Some(b) = std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether `path` is a Gemini endpoint.
pub(crate) fn is_gemini_path(path: &str) -> bool {
    path.contains("/models/")
        && (path.ends_with(":generateContent") || path.ends_with(":streamGenerateContent"))
}

fn finish_reason(reply: &MockReply) -> &'static str {
    match reply.finish_reason.as_deref() {
        Some("length") => "MAX_TOKENS",
        Some("content_filter") => "SAFETY",
        _ => "STOP",
    }
}

fn usage_metadata(usage: MockUsage) -> Value {
    let thoughts = usage.reasoning_tokens.unwrap_or(0);
    let candidates = usage.completion_tokens.saturating_sub(thoughts);
    let mut metadata = json!({
        "promptTokenCount": usage.prompt_tokens,
        "candidatesTokenCount": candidates,
        "totalTokenCount": usage.prompt_tokens + usage.completion_tokens,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": usage.prompt_tokens}],
    });
    if thoughts > 0 {
        metadata["thoughtsTokenCount"] = json!(thoughts);
    }
    if let Some(cached) = usage.cached_tokens {
        metadata["cachedContentTokenCount"] = json!(cached);
    }
    metadata
}

fn function_call_parts(reply: &MockReply) -> Vec<Value> {
    reply
        .tool_calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            let args: Value = serde_json::from_str(&call.arguments).unwrap_or_else(|_| json!({}));
            let mut part = json!({"functionCall": {"name": call.name, "args": args}});
            if i == 0 && reply.thinking_signature.is_some() {
                part["thoughtSignature"] = json!(reply.effective_thinking_signature());
            }
            part
        })
        .collect()
}

fn chunk(
    identity: &ReplyIdentity,
    parts: Vec<Value>,
    tail: Option<(&str, Value)>,
    prompt: u64,
) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    let usage = match tail {
        Some((finish, usage)) => {
            candidate["finishReason"] = json!(finish);
            usage
        }
        None => json!({"promptTokenCount": prompt, "totalTokenCount": prompt}),
    };
    json!({
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": identity.model,
        "responseId": identity.id("mock-gemini-"),
    })
}

fn status_name(status: u16) -> &'static str {
    match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ => "INTERNAL",
    }
}

impl WireProtocol for Gemini {
    type Request = GeminiRequest;

    const INVALID_JSON_BODY: &'static [u8] = b"{\"candidates\": [{\"content\": ";
    const MALFORMED_EVENT: &'static [u8] = b"data: {\"candidates\": [not json\n\n";

    fn read_request(body: &Value) -> GeminiRequest {
        Self::read_request_at(body, "", None)
    }

    fn read_request_at(body: &Value, path: &str, _host: Option<&str>) -> GeminiRequest {
        let (model, stream) = model_and_method(path);
        let system = body
            .get("systemInstruction")
            .and_then(|s| s.get("parts"))
            .map(text_chars)
            .unwrap_or(0);
        let contents = body
            .get("contents")
            .and_then(Value::as_array)
            .map(|contents| {
                contents
                    .iter()
                    .filter_map(|c| c.get("parts"))
                    .map(text_chars)
                    .sum::<usize>()
            })
            .unwrap_or_else(|| content_chars_of(body, "contents"));
        GeminiRequest {
            model,
            stream,
            prompt_chars: system + contents,
        }
    }

    fn check_request(
        headers: &HeaderMap,
        _path: &str,
        _query: Option<&str>,
        _body: &Bytes,
    ) -> Option<(u16, Value)> {
        let has = |name: &str, prefix: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix(prefix))
                .is_some_and(|v| !v.trim().is_empty())
        };
        if has("x-goog-api-key", "") || has("authorization", "Bearer ") {
            None
        } else {
            Some((
                403,
                Self::error_body(
                    403,
                    "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
                ),
            ))
        }
    }

    fn model(request: &GeminiRequest) -> &str {
        &request.model
    }

    fn streams(request: &GeminiRequest) -> bool {
        request.stream
    }

    fn reply_body(reply: &MockReply, request: &GeminiRequest, identity: &ReplyIdentity) -> Value {
        let usage = effective_usage(reply, request.prompt_chars);
        let mut parts = Vec::new();
        if let Some(thinking) = &reply.reasoning_content {
            parts.push(json!({"text": thinking, "thought": true}));
        }
        if !reply.text.is_empty() {
            parts.push(json!({"text": reply.text}));
        }
        parts.extend(function_call_parts(reply));
        chunk(
            identity,
            parts,
            Some((finish_reason(reply), usage_metadata(usage))),
            usage.prompt_tokens,
        )
    }

    fn reply_events(
        reply: &MockReply,
        request: &GeminiRequest,
        identity: &ReplyIdentity,
    ) -> EventStream {
        let usage = effective_usage(reply, request.prompt_chars);
        let prompt = usage.prompt_tokens;
        let mut events = Vec::new();
        if let Some(thinking) = &reply.reasoning_content {
            for word in words(thinking) {
                events.push(data_event(&chunk(
                    identity,
                    vec![json!({"text": word, "thought": true})],
                    None,
                    prompt,
                )));
            }
        }
        for word in words(&reply.text) {
            events.push(data_event(&chunk(
                identity,
                vec![json!({"text": word})],
                None,
                prompt,
            )));
        }
        let terminal = data_event(&chunk(
            identity,
            function_call_parts(reply),
            Some((finish_reason(reply), usage_metadata(usage))),
            prompt,
        ));
        EventStream {
            events,
            terminal: vec![terminal],
        }
    }

    fn stream_error_event(_identity: &ReplyIdentity, _events_sent: usize, message: &str) -> Bytes {
        data_event(&Self::error_body(500, message))
    }

    fn error_body(status: u16, message: &str) -> Value {
        json!({"error": {"code": status, "message": message, "status": status_name(status)}})
    }
}
