//! The bridge example, end to end on recorded Messages replies.

use router_bridge_example::{Bridge, BridgeError};
use router_messages::SupplierErrorCategory;
use serde_json::Value;

const CHAT_REQUEST: &[u8] = br#"{
    "model": "acme/claude-1",
    "messages": [{"role": "system", "content": "Be brief."},
                 {"role": "user", "content": "Weather in Paris?"}],
    "tools": [{"type": "function", "function": {"name": "weather",
               "parameters": {"type": "object"}}}],
    "stop": ["END"]
}"#;

#[test]
fn a_chat_request_becomes_a_messages_body() {
    let bridge = Bridge::new("claude-1", 1024);
    let call = bridge.parse(CHAT_REQUEST).unwrap();
    let body: Value = serde_json::from_slice(&bridge.upstream_request(&call).unwrap()).unwrap();
    assert_eq!(body["model"], "claude-1");
    assert_eq!(body["system"], "Be brief.");
    assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
    assert_eq!(body["stop_sequences"][0], "END");
    assert_eq!(body["max_tokens"], 1024);
    let (path, headers) = bridge.upstream_headers(&call, "sk-test");
    assert_eq!(path, "/messages");
    assert!(headers.contains(&("x-api-key", "sk-test".to_owned())));
    assert!(headers.contains(&("anthropic-version", "2023-06-01".to_owned())));
}

#[test]
fn a_messages_reply_becomes_a_chat_completion_without_cost() {
    let bridge = Bridge::new("claude-1", 1024);
    let call = bridge.parse(CHAT_REQUEST).unwrap();
    let reply = br#"{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-1",
        "content": [{"type": "text", "text": "Sunny."}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 12, "output_tokens": 3}}"#;
    let chat: Value =
        serde_json::from_slice(&bridge.reply(&call, "chatcmpl-1", 7, reply).unwrap()).unwrap();
    assert_eq!(chat["choices"][0]["message"]["content"], "Sunny.");
    assert_eq!(chat["model"], "acme/claude-1");
    assert_eq!(chat["usage"]["total_tokens"], 15);
    assert!(
        chat["usage"].get("cost").is_none(),
        "no gateway policy in the format"
    );
}

#[test]
fn a_messages_stream_becomes_chat_chunks_without_an_unasked_usage_chunk() {
    let bridge = Bridge::new("claude-1", 1024);
    let call = bridge.parse(CHAT_REQUEST).unwrap();
    let sse = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_s\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-1\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"weather\",\"input\":{}}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\":\\\"Paris\\\"}\"}}\n\n",
        "event: content_block_stop\n",
        "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: message_delta\n",
        "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":7}}\n\n",
        "event: message_stop\n",
        "data: {\"type\":\"message_stop\"}\n\n",
    );
    let out = String::from_utf8(
        bridge
            .stream(call, "chatcmpl-1", 7, sse.as_bytes())
            .unwrap(),
    )
    .unwrap();
    assert!(out.contains(r#""name":"weather""#), "{out}");
    assert!(out.contains(r#""finish_reason":"tool_calls""#), "{out}");
    assert!(
        !out.contains(r#""prompt_tokens""#),
        "the caller did not ask for usage: {out}"
    );
    assert!(out.ends_with("data: [DONE]\n\n"), "{out}");
}

/// The supplier's bytes as they arrive, in odd-sized pieces, give the same
/// Chat stream as the whole; an error event mid-stream ends the Chat stream
/// with Chat's error frame; a stream cut short does too.
#[test]
fn a_stream_translates_chunk_by_chunk_and_ends_with_an_error_frame_on_failure() {
    let bridge = Bridge::new("claude-1", 1024);
    let start = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_s\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-1\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Sunny\"}}\n\n",
    );
    let end = concat!(
        "event: content_block_stop\n",
        "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: message_delta\n",
        "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":7}}\n\n",
        "event: message_stop\n",
        "data: {\"type\":\"message_stop\"}\n\n",
    );
    let whole = format!("{start}{end}");
    let all_at_once = bridge
        .stream(
            bridge.parse(CHAT_REQUEST).unwrap(),
            "chatcmpl-1",
            7,
            whole.as_bytes(),
        )
        .unwrap();
    let mut translator =
        bridge.stream_translator(bridge.parse(CHAT_REQUEST).unwrap(), "chatcmpl-1", 7);
    let mut piecewise = Vec::new();
    for piece in whole.as_bytes().chunks(13) {
        translator.feed(piece, &mut piecewise).unwrap();
    }
    translator.finish(&mut piecewise).unwrap();
    assert_eq!(piecewise, all_at_once);
    let text = String::from_utf8(piecewise).unwrap();
    assert!(text.contains(r#""content":"Sunny""#), "{text}");
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");

    let failing = format!(
        "{start}event: error\ndata: {{\"type\":\"error\",\"error\":{{\"type\":\"overloaded_error\",\"message\":\"busy\"}}}}\n\n"
    );
    let (out, error) = bridge
        .stream(
            bridge.parse(CHAT_REQUEST).unwrap(),
            "chatcmpl-1",
            7,
            failing.as_bytes(),
        )
        .unwrap_err();
    let BridgeError::Supplier(error) = error else {
        panic!("a supplier error");
    };
    assert_eq!(error.category(), SupplierErrorCategory::Overloaded);
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains(r#""content":"Sunny""#), "{out}");
    assert!(out.contains(r#""code":"upstream_unavailable""#), "{out}");
    assert!(!out.contains("busy"), "{out}");

    let (out, error) = bridge
        .stream(
            bridge.parse(CHAT_REQUEST).unwrap(),
            "chatcmpl-1",
            7,
            start.as_bytes(),
        )
        .unwrap_err();
    let BridgeError::Supplier(error) = error else {
        panic!("a supplier error");
    };
    assert_eq!(error.category(), SupplierErrorCategory::InvalidReply);
    assert!(
        String::from_utf8(out)
            .unwrap()
            .contains(r#""code":"upstream_error""#)
    );
}

#[test]
fn supplier_failures_keep_their_kind() {
    let bridge = Bridge::new("claude-1", 1024);
    let overloaded =
        br#"{"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}"#;
    match bridge.upstream_error(529, &[("retry-after", "4")], overloaded) {
        BridgeError::Supplier(error) => {
            let failure = error.reported().expect("a reported failure");
            assert_eq!(failure.status, Some(529));
            assert_eq!(failure.kind.as_deref(), Some("overloaded_error"));
            assert_eq!(error.category(), SupplierErrorCategory::Overloaded);
            assert!(error.retryable());
            // The caller's answer, in its own (Chat) envelope.
            let reply = bridge.supplier_error_reply(&error);
            assert_eq!((reply.status, reply.retry_after), (503, Some(4)));
            let body: Value = serde_json::from_slice(&reply.body).unwrap();
            assert_eq!(body["error"]["code"], "upstream_unavailable");
            assert_eq!(body["error"]["type"], "api_error");
            assert!(!body.to_string().contains("busy"), "{body}");
        }
        other => panic!("{other:?}"),
    }
    let BridgeError::Supplier(denied) = bridge.upstream_error(401, &(), b"{}") else {
        panic!("a supplier error");
    };
    assert_eq!(denied.category(), SupplierErrorCategory::Authentication);
    assert!(!denied.retryable());
    assert_eq!(bridge.supplier_error_reply(&denied).status, 502);
    let call = bridge.parse(CHAT_REQUEST).unwrap();
    match bridge.reply(&call, "chatcmpl-1", 7, b"not json") {
        Err(BridgeError::Supplier(error)) => assert!(error.reported().is_none()),
        _ => panic!("an unreadable reply is an invalid reply"),
    }
}

#[test]
fn a_bad_chat_request_is_refused_in_the_chat_envelope() {
    let bridge = Bridge::new("claude-1", 1024);
    let Err(BridgeError::Client(error)) = bridge.parse(br#"{"model": "m", "messages": "hi"}"#)
    else {
        panic!("accepted a bad request");
    };
    let body: Value = serde_json::from_slice(&bridge.error_body(&error)).unwrap();
    assert_eq!(body["error"]["code"], "invalid_parameter");
    assert_eq!(body["error"]["param"], "messages");
}

/// Messages has no log probabilities: a Chat caller asking for them is
/// refused naming the field, not answered with `logprobs: null`.
#[test]
fn logprobs_are_refused_by_a_messages_supplier_naming_the_field() {
    let bridge = Bridge::new("claude-1", 1024);
    for (body, param) in [
        (
            br#"{"model": "m", "messages": [{"role": "user", "content": "hi"}], "logprobs": true}"#
                .as_slice(),
            "logprobs",
        ),
        (
            br#"{"model": "m", "messages": [{"role": "user", "content": "hi"}], "top_logprobs": 2}"#
                .as_slice(),
            "top_logprobs",
        ),
    ] {
        let call = bridge.parse(body).unwrap();
        assert_eq!(call.request.native_only.as_deref(), Some(param));
        let Err(BridgeError::Client(error)) = bridge.upstream_request(&call) else {
            panic!("{param} was dropped");
        };
        assert_eq!(error.code.as_str(), "unsupported_conversion");
        assert_eq!(error.param.as_deref(), Some(param));
    }
    // `logprobs: false` asks for nothing.
    let call = bridge
        .parse(br#"{"model": "m", "messages": [{"role": "user", "content": "hi"}], "logprobs": false}"#)
        .unwrap();
    assert!(call.request.native_only.is_none());
    assert!(bridge.upstream_request(&call).is_ok());
}

/// A supplier's refusal names the field in the caller's protocol.
#[test]
fn a_refusal_names_the_field_in_the_callers_terms() {
    let bridge = Bridge::new("claude-1", 1024);
    for (body, param) in [
        (
            br#"{"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 1.5}"#
                .as_slice(),
            "temperature",
        ),
        (
            br#"{"model": "m", "messages": [{"role": "user", "content": "hi"}], "presence_penalty": 0.5}"#
                .as_slice(),
            "presence_penalty",
        ),
        (
            br#"{"model": "m", "messages": [{"role": "user", "content": "hi"}], "stop": ["a", "b", "c", "d", "e"]}"#
                .as_slice(),
            "stop",
        ),
    ] {
        let call = bridge.parse(body).unwrap();
        let Err(BridgeError::Client(error)) = bridge.upstream_request(&call) else {
            panic!("{param} was carried");
        };
        let envelope: Value = serde_json::from_slice(&bridge.error_body(&error)).unwrap();
        assert_eq!(envelope["error"]["code"], "unsupported_conversion");
        assert_eq!(envelope["error"]["param"], param, "{envelope}");
    }
}
