//! The four translations and the error decoding, from the packaged crates.

use router_messages::SupplierErrorCategory;
use serde_json::Value;
use std::time::Duration;
use wire_consumer::*;

const CHAT: &[u8] = br#"{"model": "acme/claude", "messages": [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris?"}]}"#;

fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

#[test]
fn chat_to_messages_request_reply_and_stream() {
    let body = json(&chat_to_messages_request(CHAT, "claude-up").unwrap());
    assert_eq!(body["model"], "claude-up");
    assert_eq!(body["system"], "Be brief.");
    assert_eq!(body["max_tokens"], 1024);

    let reply = br#"{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-up",
        "content": [{"type": "text", "text": "Sunny."}], "stop_reason": "end_turn",
        "stop_sequence": null, "usage": {"input_tokens": 12, "output_tokens": 3}}"#;
    let chat = json(&messages_to_chat_reply(CHAT, reply).unwrap());
    assert_eq!(chat["object"], "chat.completion");
    assert_eq!(chat["model"], "acme/claude");
    assert_eq!(chat["choices"][0]["message"]["content"], "Sunny.");
    assert_eq!(chat["choices"][0]["finish_reason"], "stop");
    assert_eq!(chat["usage"]["total_tokens"], 15);

    let sse = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_s\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-up\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Sunny.\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":3}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    )
    .as_bytes();
    let pieces: Vec<&[u8]> = sse.chunks(17).collect();
    let out = String::from_utf8(messages_to_chat_stream(CHAT, &pieces).unwrap()).unwrap();
    assert!(out.contains(r#""content":"Sunny.""#), "{out}");
    assert!(out.contains(r#""finish_reason":"stop""#), "{out}");
    assert!(out.ends_with("data: [DONE]\n\n"), "{out}");
}

#[test]
fn responses_to_chat_request_and_reply() {
    let responses = br#"{"model": "acme/gpt", "instructions": "Be brief.", "input": "Hi"}"#;
    let chat_reply = br#"{"id": "chatcmpl-up", "object": "chat.completion", "created": 1,
        "model": "gpt-up", "choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "Hello."}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}"#;
    let (body, reply) = responses_via_chat(responses, "gpt-up", chat_reply).unwrap();
    let body = json(&body);
    assert_eq!(body["model"], "gpt-up");
    assert_eq!(body["messages"][0]["content"], "Be brief.");
    assert_eq!(body["messages"][1]["content"], "Hi");
    let reply = json(&reply);
    assert_eq!(reply["object"], "response");
    assert_eq!(reply["status"], "completed");
    assert_eq!(reply["output"][0]["content"][0]["text"], "Hello.");
    assert_eq!(reply["usage"]["total_tokens"], 7);
}

#[test]
fn supplier_errors_are_categorized_and_answered_in_the_clients_envelope() {
    let (error, reply) = messages_error_for_chat(
        429,
        &[("retry-after", "3")],
        br#"{"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}"#,
    );
    assert_eq!(error.category(), SupplierErrorCategory::RateLimited);
    assert!(error.retryable());
    assert_eq!(error.status(), Some(429));
    assert_eq!(error.supplier_code(), Some("rate_limit_error"));
    assert_eq!(error.retry_after(), Some(Duration::from_secs(3)));
    assert_eq!((reply.status, reply.retry_after), (503, Some(3)));
    let envelope = json(&reply.body);
    assert_eq!(envelope["error"]["code"], "upstream_unavailable");

    let (error, reply) = messages_error_for_chat(
        400,
        &(),
        br#"{"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 300000 tokens > 200000 maximum"}}"#,
    );
    assert_eq!(error.category(), SupplierErrorCategory::ContextTooLong);
    assert!(!error.retryable());
    assert_eq!(reply.status, 502);
    assert_eq!(json(&reply.body)["error"]["code"], "upstream_error");
}

#[test]
fn a_bad_request_is_refused_naming_the_field() {
    match chat_to_messages_request(br#"{"model": "m", "messages": "hi"}"#, "claude-up") {
        Err(Failure::Client(error)) => assert_eq!(error.param.as_deref(), Some("messages")),
        other => panic!("{other:?}"),
    }
}
