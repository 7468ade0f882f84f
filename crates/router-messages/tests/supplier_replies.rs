//! Reading Messages suppliers (JSON and SSE) and the corners of the encoders:
//! usage conversion, unknown provider fields and events (D-30, CF-08),
//! stream failures (D-33), the client reply shape (D-29, D-31, D-32), and
//! what a conversion to Messages keeps or refuses (F-08, F-11, GP-74).
//!
//! Long by design: the case tables of reply and stream decoding, and the encoder corners.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a panic is the failure report"
)]

use router_canonical::request::NativeFields;
use router_canonical::sse::{Decoder, Frame};
use router_canonical::{
    ApiError, BlockDelta, BlockKind, CacheControl, ContentPart, ErrorCode, ImageSource, Message,
    OutputBlock, Protocol, Reasoning, Request, Response, ResponseFormat, Role, Sampling,
    StopReason, StreamEvent, ThinkingConfig, ThinkingMode, Tool, ToolChoice, Usage,
};
use router_messages::client::StreamEncoder;
use router_messages::{
    ClientCodec, ClientStreamEncoder, DecodeError, MessagesClient, MessagesSupplier, ReplyContext,
    StreamContext, StreamEnd, SupplierCodec, SupplierError, SupplierStreamDecoder, SupplierTarget,
};
use router_wire_testkit::codecs::{self, FixedHeaders};
use router_wire_testkit::frames::named as frame;
use serde_json::{Value, json};

/// The gateway's setting: a reply without usage is invalid.
const SUPPLIER: MessagesSupplier = MessagesSupplier::new().with_require_usage(true);

/// A JSON body with the supported `anthropic-version`.
const JSON: FixedHeaders = FixedHeaders(&[
    ("content-type", "application/json"),
    ("anthropic-version", "2023-06-01"),
]);

fn parse_request(body: &[u8]) -> Result<Request, ApiError> {
    codecs::parse(&MessagesClient, &JSON, body)
}

fn decode_response(body: &[u8]) -> Result<Response, SupplierError> {
    SUPPLIER.decode_response(body)
}

/// The crate's typed error behind an invalid or unsupported reply.
fn typed(err: &SupplierError) -> Option<&DecodeError> {
    match err {
        SupplierError::InvalidReply(source) | SupplierError::Unsupported(source) => {
            source.downcast_ref::<DecodeError>()
        }
        _ => None,
    }
}

fn encode_response(response: &Response, ctx: &ReplyContext<'_>) -> Vec<u8> {
    MessagesClient.encode_response(response, ctx, &())
}

fn error_body(error: &ApiError) -> Vec<u8> {
    MessagesClient.error_body(error)
}

fn encode_request(
    req: &Request,
    model: &str,
    default_max_tokens: u32,
) -> Result<Vec<u8>, ApiError> {
    codecs::encode(&SUPPLIER, req, model, Some(default_max_tokens))
}

fn reply(content: Value, stop_reason: Value, usage: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
        "content": content, "stop_reason": stop_reason, "stop_sequence": null,
        "usage": usage,
        "provider_x": {"ignored": true}
    }))
    .unwrap()
}

fn usage(input: u64, output: u64) -> Value {
    json!({"input_tokens": input, "output_tokens": output})
}

fn text(t: &str) -> Value {
    json!([{"type": "text", "text": t}])
}

// ---------------------------------------------------------------------------
// decode_response

#[test]
fn stop_reasons_map_to_canonical() {
    for (wire, expected) in [
        (json!("end_turn"), StopReason::EndTurn),
        (json!("max_tokens"), StopReason::MaxTokens),
        (json!("stop_sequence"), StopReason::StopSequence),
        (json!("tool_use"), StopReason::ToolUse),
        (json!("refusal"), StopReason::Refusal),
        (json!("pause_turn"), StopReason::PauseTurn),
        (
            json!("model_context_window_exceeded"),
            StopReason::Other("model_context_window_exceeded".into()),
        ),
        (Value::Null, StopReason::EndTurn),
    ] {
        let body = reply(text("x"), wire.clone(), usage(1, 1));
        assert_eq!(
            decode_response(&body).unwrap().stop_reason,
            expected,
            "{wire}"
        );
    }
    let body = reply(
        json!([{"type": "tool_use", "id": "t", "name": "f", "input": {}}]),
        Value::Null,
        usage(1, 1),
    );
    assert_eq!(
        decode_response(&body).unwrap().stop_reason,
        StopReason::ToolUse
    );
}

#[test]
fn usage_counts_cache_in_the_canonical_input() {
    let body = reply(
        text("x"),
        json!("end_turn"),
        json!({"input_tokens": 10, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 1000,
               "output_tokens": 50, "output_tokens_details": {"thinking_tokens": 30},
               "cache_creation": {"ephemeral_5m_input_tokens": 1000}, "service_tier": "standard"}),
    );
    let response = decode_response(&body).unwrap();
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 1110,
            output_tokens: 50,
            cache_read_input_tokens: 100,
            cache_creation_input_tokens: 1000,
            reasoning_tokens: 30,
        }
    );
    // ...and the client sees Anthropic's split again.
    let ctx = ReplyContext::new("msg_r", "pub/model", 0);
    let client: Value = serde_json::from_slice(&encode_response(&response, &ctx)).unwrap();
    assert_eq!(
        client["usage"],
        json!({"input_tokens": 10, "cache_creation_input_tokens": 1000, "cache_read_input_tokens": 100,
               "output_tokens": 50, "output_tokens_details": {"thinking_tokens": 30}})
    );
    // Null cache counts (older suppliers) read as 0.
    let body = reply(
        text("x"),
        json!("end_turn"),
        json!({"input_tokens": 3, "output_tokens": 2, "cache_read_input_tokens": null, "cache_creation_input_tokens": null}),
    );
    assert_eq!(decode_response(&body).unwrap().usage.input_tokens, 3);
}

#[test]
fn unknown_provider_members_are_dropped_from_the_client_reply() {
    let body = reply(
        json!([
            {"type": "thinking", "thinking": "t", "signature": "sig", "provider_y": 1},
            {"type": "text", "text": "a", "citations": null, "provider_z": [1]},
            {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"k": 1}, "caller": {"type": "direct"}}
        ]),
        json!("tool_use"),
        json!({"input_tokens": 1, "output_tokens": 1, "server_tool_use": {"web_search_requests": 0}}),
    );
    let response = decode_response(&body).unwrap();
    assert_eq!(
        response.output,
        vec![
            OutputBlock::Thinking {
                text: "t".into(),
                signature: Some("sig".into())
            },
            OutputBlock::Text { text: "a".into() },
            OutputBlock::ToolCall {
                id: "toolu_1".into(),
                name: "f".into(),
                arguments: r#"{"k":1}"#.into()
            },
        ]
    );
    let ctx = ReplyContext::new("msg_r", "pub/model", 0);
    let client = String::from_utf8(encode_response(&response, &ctx)).unwrap();
    for leaked in ["provider", "caller", "server_tool_use", "msg_1"] {
        assert!(!client.contains(leaked), "{leaked} leaked: {client}");
    }
}

#[test]
fn invalid_replies_are_typed_errors() {
    type Case = (&'static str, Vec<u8>, fn(&SupplierError) -> bool);
    let cases: Vec<Case> = vec![
        ("not JSON", b"<html>".to_vec(), |e| {
            matches!(typed(e), Some(DecodeError::InvalidJson(_)))
        }),
        (
            "trailing garbage",
            [
                reply(text("x"), json!("end_turn"), usage(1, 1)),
                b"x".to_vec(),
            ]
            .concat(),
            |e| matches!(typed(e), Some(DecodeError::InvalidJson(_))),
        ),
        (
            "content not an array",
            br#"{"content": 1, "usage": {"input_tokens": 1, "output_tokens": 1}}"#.to_vec(),
            |e| matches!(typed(e), Some(DecodeError::InvalidJson(json)) if json.path == "content"),
        ),
        (
            "tool_use without input",
            reply(
                json!([{"type": "tool_use", "id": "t", "name": "f"}]),
                json!("tool_use"),
                usage(1, 1),
            ),
            |e| matches!(typed(e), Some(DecodeError::InvalidJson(json)) if json.path == "content[0].input"),
        ),
        (
            "no usage",
            serde_json::to_vec(&json!({"id": "x", "content": [], "stop_reason": "end_turn"}))
                .unwrap(),
            |e| matches!(typed(e), Some(DecodeError::MissingUsage)),
        ),
        (
            "usage without output_tokens",
            reply(text("x"), json!("end_turn"), json!({"input_tokens": 1})),
            |e| matches!(typed(e), Some(DecodeError::MissingUsage)),
        ),
        (
            "thinking above output",
            reply(
                text("x"),
                json!("end_turn"),
                json!({"input_tokens": 1, "output_tokens": 1, "output_tokens_details": {"thinking_tokens": 2}}),
            ),
            |e| matches!(typed(e), Some(DecodeError::InvalidUsage { .. })),
        ),
        (
            "negative tokens",
            reply(
                text("x"),
                json!("end_turn"),
                json!({"input_tokens": -1, "output_tokens": 1}),
            ),
            |e| matches!(typed(e), Some(DecodeError::InvalidJson(_))),
        ),
        (
            "overflowing input",
            reply(
                text("x"),
                json!("end_turn"),
                json!({"input_tokens": u64::MAX, "cache_read_input_tokens": 1, "output_tokens": 1}),
            ),
            |e| matches!(typed(e), Some(DecodeError::InvalidUsage { .. })),
        ),
        (
            "server_tool_use block (CF-08)",
            reply(
                json!([{"type": "text", "text": "a"}, {"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}}]),
                json!("end_turn"),
                usage(1, 1),
            ),
            |e| matches!(typed(e), Some(DecodeError::UnknownContent { path, kind }) if path == "content[1]" && kind == "server_tool_use"),
        ),
        (
            "image block in output",
            reply(
                json!([{"type": "image", "source": {"type": "url", "url": "https://x"}}]),
                json!("end_turn"),
                usage(1, 1),
            ),
            |e| matches!(typed(e), Some(DecodeError::UnknownContent { kind, .. }) if kind == "image"),
        ),
        (
            "future block type",
            reply(
                json!([{"type": "hologram", "data": 1}]),
                json!("end_turn"),
                usage(1, 1),
            ),
            |e| matches!(typed(e), Some(DecodeError::UnknownContent { kind, .. }) if kind == "hologram"),
        ),
    ];
    for (name, body, expected) in cases {
        let err = decode_response(&body).expect_err(name);
        assert!(expected(&err), "{name}: {err:?}");
        // Not a failure the supplier reported: an invalid reply, or one the
        // canonical model cannot represent (an unknown block type).
        let unknown = matches!(typed(&err), Some(DecodeError::UnknownContent { .. }));
        assert!(err.reported().is_none(), "{name}");
        assert_eq!(
            matches!(err, SupplierError::Unsupported(_)),
            unknown,
            "{name}"
        );
    }
}

// ---------------------------------------------------------------------------
// StreamDecoder

fn start(usage: Value) -> Frame {
    frame(
        "message_start",
        json!({"type": "message_start", "message": {
        "id": "msg_s", "type": "message", "role": "assistant", "model": "m", "content": [],
        "stop_reason": null, "stop_sequence": null, "usage": usage}}),
    )
}

fn block_start(index: usize, block: Value) -> Frame {
    frame(
        "content_block_start",
        json!({"type": "content_block_start", "index": index, "content_block": block}),
    )
}

fn delta(index: usize, delta: Value) -> Frame {
    frame(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": index, "delta": delta}),
    )
}

fn block_stop(index: usize) -> Frame {
    frame(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    )
}

fn message_delta(stop: &str, usage: Value) -> Frame {
    frame(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": usage}),
    )
}

fn stop() -> Frame {
    frame("message_stop", json!({"type": "message_stop"}))
}

fn decode_all(
    frames: &[Frame],
) -> (
    Box<dyn SupplierStreamDecoder>,
    Result<Vec<StreamEvent>, SupplierError>,
) {
    let mut decoder = SUPPLIER.stream_decoder();
    let mut events = Vec::new();
    for f in frames {
        match decoder.decode(f) {
            Ok(more) => events.extend(more),
            Err(err) => return (decoder, Err(err)),
        }
    }
    (decoder, Ok(events))
}

#[test]
fn unknown_events_and_pings_are_dropped() {
    let (decoder, events) = decode_all(&[
        start(usage(5, 1)),
        frame("ping", json!({"type": "ping"})),
        frame(
            "provider_event",
            json!({"type": "provider_event", "secret": "supplier-name"}),
        ),
        block_start(0, json!({"type": "text", "text": ""})),
        delta(0, json!({"type": "text_delta", "text": "hi"})),
        delta(
            0,
            json!({"type": "citations_delta", "citation": {"type": "char_location"}}),
        ),
        block_stop(0),
        message_delta("end_turn", json!({"output_tokens": 7})),
        stop(),
        frame("ping", json!({"type": "ping"})),
        Frame {
            event: None,
            data: String::new(),
        },
    ]);
    let events = events.unwrap();
    assert!(decoder.is_finished());
    assert_eq!(events.len(), 6, "{events:?}");
    let text = serde_json::to_string(&events).unwrap();
    assert!(!text.contains("supplier-name"));
    assert!(
        matches!(events.last(), Some(StreamEvent::Finish { stop_reason: StopReason::EndTurn, usage, .. })
        if usage.input_tokens == 5 && usage.output_tokens == 7)
    );
}

#[test]
fn message_delta_usage_is_cumulative_and_may_repeat_input() {
    let (_, events) = decode_all(&[
        start(json!({"input_tokens": 5, "cache_read_input_tokens": 20, "output_tokens": 1})),
        message_delta("max_tokens", json!({"output_tokens": 3})),
        message_delta(
            "max_tokens",
            json!({"input_tokens": 6, "cache_read_input_tokens": 20,
            "cache_creation_input_tokens": 2, "output_tokens": 9, "output_tokens_details": {"thinking_tokens": 4}}),
        ),
        stop(),
    ]);
    let events = events.unwrap();
    assert_eq!(
        events[1],
        StreamEvent::Usage {
            usage: Usage {
                input_tokens: 25,
                output_tokens: 1,
                cache_read_input_tokens: 20,
                ..Usage::default()
            }
        }
    );
    assert_eq!(
        events.last().unwrap(),
        &StreamEvent::Finish {
            stop_reason: StopReason::MaxTokens,
            stop_sequence: None,
            usage: Usage {
                input_tokens: 28,
                output_tokens: 9,
                cache_read_input_tokens: 20,
                cache_creation_input_tokens: 2,
                reasoning_tokens: 4
            },
        }
    );
}

#[test]
fn blocks_carry_their_initial_content_and_close_at_message_stop() {
    let (_, events) = decode_all(&[
        start(usage(1, 1)),
        block_start(
            0,
            json!({"type": "thinking", "thinking": "pre", "signature": "s0"}),
        ),
        block_stop(0),
        block_start(
            1,
            json!({"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}}),
        ),
        delta(1, json!({"type": "input_json_delta", "partial_json": ""})),
        message_delta("tool_use", json!({"output_tokens": 2})),
        stop(),
    ]);
    let events = events.unwrap();
    assert_eq!(
        events[2..],
        [
            StreamEvent::BlockStart {
                index: 0,
                block: BlockKind::Thinking
            },
            StreamEvent::Delta {
                index: 0,
                delta: BlockDelta::Thinking("pre".into())
            },
            StreamEvent::Delta {
                index: 0,
                delta: BlockDelta::Signature("s0".into())
            },
            StreamEvent::BlockStop { index: 0 },
            StreamEvent::BlockStart {
                index: 1,
                block: BlockKind::ToolCall {
                    id: "toolu_1".into(),
                    name: "f".into()
                }
            },
            StreamEvent::Delta {
                index: 1,
                delta: BlockDelta::ToolArguments(r#"{"a":1}"#.into())
            },
            StreamEvent::Delta {
                index: 1,
                delta: BlockDelta::ToolArguments(String::new())
            },
            StreamEvent::BlockStop { index: 1 },
            StreamEvent::Finish {
                stop_reason: StopReason::ToolUse,
                stop_sequence: None,
                usage: Usage {
                    input_tokens: 1,
                    output_tokens: 2,
                    ..Usage::default()
                }
            },
        ]
    );
}

#[test]
fn supplier_indexes_are_renumbered_in_opening_order() {
    let (_, events) = decode_all(&[
        start(usage(1, 1)),
        block_start(3, json!({"type": "text", "text": ""})),
        delta(3, json!({"type": "text_delta", "text": "a"})),
        block_stop(3),
    ]);
    let events = events.unwrap();
    assert_eq!(
        events[2],
        StreamEvent::BlockStart {
            index: 0,
            block: BlockKind::Text
        }
    );
    assert_eq!(
        events[3],
        StreamEvent::Delta {
            index: 0,
            delta: BlockDelta::Text("a".into())
        }
    );
}

#[test]
fn stream_failures_are_typed_errors() {
    type Case = (&'static str, Vec<Frame>, fn(&SupplierError) -> bool);
    let cases: Vec<Case> = vec![
        (
            "error event (D-33)",
            vec![
                start(usage(1, 1)),
                frame(
                    "error",
                    json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded at supplier-x"}}),
                ),
            ],
            |e| matches!(e, SupplierError::Reported(f) if f.kind.as_deref() == Some("overloaded_error")),
        ),
        (
            "error before start",
            vec![frame(
                "error",
                json!({"type": "error", "error": {"type": "api_error", "message": "m"}}),
            )],
            |e| matches!(e, SupplierError::Reported(_)),
        ),
        (
            "not JSON",
            vec![Frame {
                event: Some("message_start".into()),
                data: "{".into(),
            }],
            |e| matches!(typed(e), Some(DecodeError::InvalidJson(_))),
        ),
        (
            "block before message_start",
            vec![block_start(0, json!({"type": "text", "text": ""}))],
            |e| matches!(typed(e), Some(DecodeError::OutOfOrder { kind }) if kind == "content_block_start"),
        ),
        (
            "second message_start",
            vec![start(usage(1, 1)), start(usage(1, 1))],
            |e| matches!(typed(e), Some(DecodeError::OutOfOrder { .. })),
        ),
        (
            "event after message_stop",
            vec![
                start(usage(1, 1)),
                message_delta("end_turn", json!({"output_tokens": 1})),
                stop(),
                block_start(0, json!({"type": "text", "text": ""})),
            ],
            |e| matches!(typed(e), Some(DecodeError::AfterStop)),
        ),
        (
            "unknown block type (CF-08)",
            vec![
                start(usage(1, 1)),
                block_start(
                    0,
                    json!({"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}}),
                ),
            ],
            |e| matches!(typed(e), Some(DecodeError::UnknownContent { kind, .. }) if kind == "server_tool_use"),
        ),
        (
            "unknown delta type",
            vec![
                start(usage(1, 1)),
                block_start(0, json!({"type": "text", "text": ""})),
                delta(0, json!({"type": "hologram_delta", "x": 1})),
            ],
            |e| matches!(typed(e), Some(DecodeError::UnknownDelta { kind, .. }) if kind == "hologram_delta"),
        ),
        (
            "text delta for a tool block",
            vec![
                start(usage(1, 1)),
                block_start(
                    0,
                    json!({"type": "tool_use", "id": "t", "name": "f", "input": {}}),
                ),
                delta(0, json!({"type": "text_delta", "text": "x"})),
            ],
            |e| matches!(typed(e), Some(DecodeError::MismatchedDelta { .. })),
        ),
        (
            "signature for a text block",
            vec![
                start(usage(1, 1)),
                block_start(0, json!({"type": "text", "text": ""})),
                delta(0, json!({"type": "signature_delta", "signature": "s"})),
            ],
            |e| matches!(typed(e), Some(DecodeError::MismatchedDelta { .. })),
        ),
        (
            "delta for a block never started",
            vec![
                start(usage(1, 1)),
                delta(0, json!({"type": "text_delta", "text": "x"})),
            ],
            |e| matches!(typed(e), Some(DecodeError::UnknownBlock { index: 0 })),
        ),
        (
            "delta after its block stopped",
            vec![
                start(usage(1, 1)),
                block_start(0, json!({"type": "text", "text": ""})),
                block_stop(0),
                delta(0, json!({"type": "text_delta", "text": "x"})),
            ],
            |e| matches!(typed(e), Some(DecodeError::UnknownBlock { index: 0 })),
        ),
        (
            "block index reused",
            vec![
                start(usage(1, 1)),
                block_start(0, json!({"type": "text", "text": ""})),
                block_stop(0),
                block_start(0, json!({"type": "text", "text": ""})),
            ],
            |e| matches!(typed(e), Some(DecodeError::DuplicateBlock { index: 0 })),
        ),
        (
            "no usage at all",
            vec![
                frame(
                    "message_start",
                    json!({"type": "message_start", "message": {"id": "m", "model": "m"}}),
                ),
                message_delta("end_turn", json!({})),
                stop(),
            ],
            |e| matches!(typed(e), Some(DecodeError::MissingUsage)),
        ),
        (
            "implausible usage",
            vec![
                start(usage(1, 1)),
                message_delta(
                    "end_turn",
                    json!({"output_tokens": 1, "output_tokens_details": {"thinking_tokens": 5}}),
                ),
                stop(),
            ],
            |e| matches!(typed(e), Some(DecodeError::InvalidUsage { .. })),
        ),
    ];
    for (name, frames, expected) in cases {
        let (decoder, result) = decode_all(&frames);
        let err = result.expect_err(name);
        assert!(expected(&err), "{name}: {err:?}");
        assert!(
            !decoder.is_finished()
                || matches!(
                    typed(&err),
                    Some(
                        DecodeError::AfterStop
                            | DecodeError::MissingUsage
                            | DecodeError::InvalidUsage { .. }
                    )
                ),
            "{name}"
        );
        // What a client may be shown never carries supplier text (P-08).
        assert!(!err.to_string().contains("supplier-x"), "{name}");
        // The supplier's own failure is reported (the gateway answers
        // `upstream_error`); the rest is not (`invalid_upstream_response`).
        assert_eq!(
            err.reported().is_some(),
            typed(&err).is_none(),
            "{name}: {err:?}"
        );
        if let Some(failure) = err.reported() {
            assert_eq!(
                failure.status, None,
                "{name}: a stream failure has no status"
            );
        }
    }
}

#[test]
fn a_truncated_stream_is_not_finished() {
    let (decoder, events) = decode_all(&[
        start(usage(1, 1)),
        block_start(0, json!({"type": "text", "text": ""})),
        delta(0, json!({"type": "text_delta", "text": "partial"})),
        message_delta("end_turn", json!({"output_tokens": 3})),
    ]);
    assert!(events.is_ok());
    assert!(!decoder.is_finished());
    assert!(
        !events
            .unwrap()
            .iter()
            .any(|e| matches!(e, StreamEvent::Finish { .. }))
    );
}

// ---------------------------------------------------------------------------
// encode_response and StreamEncoder

fn response(output: Vec<OutputBlock>, stop_reason: StopReason) -> Response {
    Response {
        id: "chatcmpl-supplier".into(),
        model: "supplier-model".into(),
        output,
        stop_reason,
        stop_sequence: None,
        usage: Usage {
            input_tokens: 10,
            output_tokens: 5,
            ..Usage::default()
        },
        created: 1,
    }
}

#[test]
fn client_reply_has_exactly_the_d29_shape() {
    let resp = response(
        vec![
            OutputBlock::Thinking {
                text: "t".into(),
                signature: None,
            },
            OutputBlock::RedactedThinking { data: "d".into() },
            OutputBlock::Text { text: "a".into() },
            OutputBlock::ToolCall {
                id: "call_1".into(),
                name: "f".into(),
                arguments: "{\"x\":1}".into(),
            },
            OutputBlock::ToolCall {
                id: "call_2".into(),
                name: "g".into(),
                arguments: "".into(),
            },
            OutputBlock::ToolCall {
                id: "call_3".into(),
                name: "h".into(),
                arguments: "{\"x\":".into(),
            },
        ],
        StopReason::ToolUse,
    );
    let ctx = ReplyContext::new("msg_router", "pub/model", 0);
    let value: Value = serde_json::from_slice(&encode_response(&resp, &ctx)).unwrap();
    assert_eq!(
        value,
        json!({
            "id": "msg_router", "type": "message", "role": "assistant", "model": "pub/model",
            "content": [
                {"type": "thinking", "thinking": "t", "signature": ""},
                {"type": "redacted_thinking", "data": "d"},
                {"type": "text", "text": "a"},
                {"type": "tool_use", "id": "call_1", "name": "f", "input": {"x": 1}},
                {"type": "tool_use", "id": "call_2", "name": "g", "input": {}},
                {"type": "tool_use", "id": "call_3", "name": "h", "input": {}}
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                      "output_tokens": 5, "output_tokens_details": {"thinking_tokens": 0}}
        })
    );
}

#[test]
fn refusals_and_filters_read_as_refusal() {
    let ctx = ReplyContext::new("msg_r", "m", 0);
    let refused = response(
        vec![OutputBlock::Refusal {
            text: "I can't help with that.".into(),
        }],
        StopReason::EndTurn,
    );
    let value: Value = serde_json::from_slice(&encode_response(&refused, &ctx)).unwrap();
    assert_eq!(
        value["content"],
        json!([{"type": "text", "text": "I can't help with that."}])
    );
    assert_eq!(value["stop_reason"], "refusal");
    for (stop, wire) in [
        (StopReason::ContentFilter, "refusal"),
        (StopReason::PauseTurn, "pause_turn"),
        (StopReason::Other("eos".into()), "eos"),
        (StopReason::StopSequence, "stop_sequence"),
        (StopReason::MaxTokens, "max_tokens"),
    ] {
        let mut r = response(vec![OutputBlock::Text { text: "x".into() }], stop);
        r.stop_sequence = Some("END".into());
        let value: Value = serde_json::from_slice(&encode_response(&r, &ctx)).unwrap();
        assert_eq!(value["stop_reason"], wire);
        assert_eq!(value["stop_sequence"], "END");
    }
}

fn sse_events(bytes: &[u8]) -> Vec<(String, Value)> {
    let mut frames = Vec::new();
    Decoder::default().feed(bytes, &mut frames).unwrap();
    frames
        .into_iter()
        .map(|f| {
            (
                f.event.unwrap_or_default(),
                serde_json::from_str(&f.data).unwrap(),
            )
        })
        .collect()
}

fn encoder() -> StreamEncoder {
    MessagesClient.stream_encoder(StreamContext::new("msg_router", "pub/model", 0), ())
}

/// Canonical events as the Chat decoder produces them: no early usage,
/// synthesised blocks, a refusal, a tool call.
#[test]
fn chat_origin_events_become_a_well_formed_messages_stream() {
    let usage = Usage {
        input_tokens: 30,
        output_tokens: 8,
        cache_read_input_tokens: 10,
        ..Usage::default()
    };
    let events = vec![
        StreamEvent::Start {
            id: "chatcmpl-1".into(),
            model: "gpt-x".into(),
        },
        StreamEvent::BlockStart {
            index: 0,
            block: BlockKind::Thinking,
        },
        StreamEvent::Delta {
            index: 0,
            delta: BlockDelta::Thinking("hmm".into()),
        },
        StreamEvent::BlockStop { index: 0 },
        StreamEvent::BlockStart {
            index: 1,
            block: BlockKind::Text,
        },
        StreamEvent::Delta {
            index: 1,
            delta: BlockDelta::Text("Hi".into()),
        },
        StreamEvent::Delta {
            index: 1,
            delta: BlockDelta::Text(String::new()),
        },
        StreamEvent::BlockStop { index: 1 },
        StreamEvent::BlockStart {
            index: 2,
            block: BlockKind::ToolCall {
                id: "call_9".into(),
                name: "f".into(),
            },
        },
        StreamEvent::Delta {
            index: 2,
            delta: BlockDelta::ToolArguments("{}".into()),
        },
        StreamEvent::BlockStop { index: 2 },
        StreamEvent::Finish {
            stop_reason: StopReason::ToolUse,
            stop_sequence: None,
            usage,
        },
    ];
    let mut enc = encoder();
    let mut out = Vec::new();
    for e in &events {
        enc.event(e, &mut out);
    }
    enc.event(
        &StreamEvent::BlockStart {
            index: 3,
            block: BlockKind::Text,
        },
        &mut out,
    );
    let events = sse_events(&out);
    // D-31: every event name equals its payload's type; the set is closed.
    for (name, data) in &events {
        assert_eq!(data["type"], name.as_str());
        assert!(
            [
                "message_start",
                "ping",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
            .contains(&name.as_str())
        );
    }
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"message_start"));
    assert_eq!(names.get(1), Some(&"ping"));
    assert_eq!(
        names.last(),
        Some(&"message_stop"),
        "nothing after message_stop"
    );
    let start = &events[0].1["message"];
    assert_eq!(start["id"], "msg_router");
    assert_eq!(start["model"], "pub/model");
    assert_eq!(start["content"], json!([]));
    assert_eq!(start["usage"]["input_tokens"], 0, "no usage known yet");
    // D-32: only the four delta types.
    for (name, data) in &events {
        if name == "content_block_delta" {
            let kind = data["delta"]["type"].as_str().unwrap();
            assert!(
                [
                    "text_delta",
                    "thinking_delta",
                    "signature_delta",
                    "input_json_delta"
                ]
                .contains(&kind)
            );
        }
    }
    let (_, delta) = events.iter().find(|(n, _)| n == "message_delta").unwrap();
    assert_eq!(
        delta["delta"],
        json!({"stop_reason": "tool_use", "stop_sequence": null})
    );
    assert_eq!(delta["usage"]["input_tokens"], 20);
    assert_eq!(delta["usage"]["cache_read_input_tokens"], 10);
    assert_eq!(delta["usage"]["output_tokens"], 8);
    let tool_start = events
        .iter()
        .find(|(n, d)| n == "content_block_start" && d["index"] == 2)
        .unwrap();
    assert_eq!(
        tool_start.1["content_block"],
        json!({"type": "tool_use", "id": "call_9", "name": "f", "input": {}})
    );
}

#[test]
fn early_usage_reaches_message_start_and_refusal_sets_the_stop_reason() {
    let mut enc = encoder();
    let mut out = Vec::new();
    enc.event(
        &StreamEvent::Start {
            id: "x".into(),
            model: "y".into(),
        },
        &mut out,
    );
    enc.event(
        &StreamEvent::Usage {
            usage: Usage {
                input_tokens: 50,
                cache_creation_input_tokens: 20,
                output_tokens: 1,
                ..Usage::default()
            },
        },
        &mut out,
    );
    // Written at once, not held until the first block: time to first byte.
    let early = String::from_utf8(out.clone()).unwrap();
    assert!(
        early.starts_with("event: message_start\n") && early.contains("event: ping\n"),
        "{early}"
    );
    enc.event(
        &StreamEvent::BlockStart {
            index: 0,
            block: BlockKind::Refusal,
        },
        &mut out,
    );
    enc.event(
        &StreamEvent::Delta {
            index: 0,
            delta: BlockDelta::Refusal("No.".into()),
        },
        &mut out,
    );
    // Finish without BlockStop: the encoder closes the block itself.
    enc.finish(
        &StreamEnd::new(
            &StopReason::EndTurn,
            &Usage {
                input_tokens: 50,
                output_tokens: 2,
                cache_creation_input_tokens: 20,
                ..Usage::default()
            },
        ),
        &mut out,
    );
    let events = sse_events(&out);
    assert_eq!(events[0].1["message"]["usage"]["input_tokens"], 30);
    assert_eq!(
        events[0].1["message"]["usage"]["cache_creation_input_tokens"],
        20
    );
    assert_eq!(
        events[2].1["content_block"],
        json!({"type": "text", "text": ""})
    );
    assert_eq!(
        events[3].1["delta"],
        json!({"type": "text_delta", "text": "No."})
    );
    assert_eq!(events[4].0, "content_block_stop");
    assert_eq!(events[5].1["delta"]["stop_reason"], "refusal");
    assert_eq!(events[6].0, "message_stop");
}

#[test]
fn a_failure_mid_stream_ends_with_an_error_event() {
    let mut enc = encoder();
    let mut out = Vec::new();
    enc.event(
        &StreamEvent::BlockStart {
            index: 0,
            block: BlockKind::Text,
        },
        &mut out,
    );
    enc.event(
        &StreamEvent::Delta {
            index: 0,
            delta: BlockDelta::Text("par".into()),
        },
        &mut out,
    );
    // The public error a gateway renders for a supplier's failure.
    let err = ApiError::new(
        ErrorCode::UpstreamError,
        "the upstream supplier failed while generating the response",
    );
    enc.error(&err, &mut out);
    enc.finish(
        &StreamEnd::new(&StopReason::EndTurn, &Usage::default()),
        &mut out,
    );
    let events = sse_events(&out);
    let (name, data) = events.last().unwrap();
    assert_eq!(name, "error");
    assert_eq!(
        data,
        &json!({"type": "error", "error": {"type": "api_error",
            "message": "the upstream supplier failed while generating the response"}})
    );
    assert!(!String::from_utf8(out).unwrap().contains("supplier-x"));
    // The same envelope is the body of an error response (D-34).
    let body: Value = serde_json::from_slice(&error_body(&ApiError::new(
        ErrorCode::UpstreamUnavailable,
        "m",
    )))
    .unwrap();
    assert_eq!(
        body,
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "m"}})
    );
}

// ---------------------------------------------------------------------------
// encode_request

fn chat_request(messages: Vec<Message>) -> Request {
    Request {
        model: "acme/m".into(),
        messages,
        sampling: Sampling {
            max_output_tokens: Some(100),
            ..Sampling::default()
        },
        inbound: Some(Protocol::Chat),
        ..Request::default()
    }
}

fn user(parts: Vec<ContentPart>) -> Message {
    Message {
        role: Role::User,
        content: parts,
        content_was_string: false,
        name: None,
    }
}

fn text_part(text: &str, ttl: Option<&str>) -> ContentPart {
    ContentPart::Text {
        text: text.into(),
        cache_control: ttl.map(|ttl| CacheControl {
            kind: "ephemeral".into(),
            ttl: (!ttl.is_empty()).then(|| ttl.to_owned()),
        }),
    }
}

fn encode(req: &Request) -> Result<Value, ApiError> {
    encode_request(req, "up", 777).map(|b| serde_json::from_slice(&b).unwrap())
}

fn unsupported(req: &Request) -> String {
    let err = encode(req).expect_err("expected unsupported_conversion");
    assert_eq!(err.code, ErrorCode::UnsupportedConversion, "{err:?}");
    assert_eq!(err.status(), 400);
    err.message
}

#[test]
fn converted_requests_refuse_what_messages_cannot_carry() {
    // F-11: a one-hour marker from Chat.
    unsupported(&chat_request(vec![user(vec![text_part("a", Some("1h"))])]));
    let mut req = chat_request(vec![Message::text(Role::User, "a")]);
    req.tools = vec![Tool {
        name: "f".into(),
        description: None,
        parameters: json!({"type": "object"}),
        strict: None,
        cache_control: Some(CacheControl {
            kind: "ephemeral".into(),
            ttl: Some("1h".into()),
        }),
    }];
    unsupported(&req);
    unsupported(&chat_request(vec![user(vec![ContentPart::ToolResult {
        tool_call_id: "c".into(),
        content: vec![text_part("r", Some("1h"))],
        is_error: false,
        cache_control: None,
    }])]));
    // An unresolved upload, another protocol's opaque part.
    unsupported(&chat_request(vec![user(vec![ContentPart::Image {
        source: ImageSource::Upload {
            file_id: "upl_1".into(),
            param: String::new(),
        },
        detail: None,
        cache_control: None,
    }])]));
    unsupported(&chat_request(vec![user(vec![ContentPart::Opaque {
        protocol: Protocol::Chat,
        value: json!({"type": "x"}),
    }])]));
    // Tool arguments that are not a JSON object.
    for arguments in ["{\"a\":", "[1]", "5"] {
        unsupported(&chat_request(vec![
            Message::text(Role::User, "q"),
            Message {
                role: Role::Assistant,
                content: vec![ContentPart::ToolCall {
                    id: "c".into(),
                    name: "f".into(),
                    arguments: arguments.into(),
                }],
                content_was_string: true,
                name: None,
            },
        ]));
    }
    // Sampling and output controls.
    let mut req = chat_request(vec![Message::text(Role::User, "a")]);
    req.sampling.temperature = Some(1.5);
    unsupported(&req);
    let mut req = chat_request(vec![Message::text(Role::User, "a")]);
    req.sampling.presence_penalty = Some(0.5);
    unsupported(&req);
    let mut req = chat_request(vec![Message::text(Role::User, "a")]);
    req.response_format = Some(ResponseFormat::JsonObject);
    unsupported(&req);
    let mut req = chat_request(vec![Message::text(Role::User, "a")]);
    req.response_format = Some(ResponseFormat::JsonSchema {
        name: "n".into(),
        schema: json!({"type": "object"}),
        strict: None,
        description: Some("d".into()),
    });
    unsupported(&req);
    let mut req = chat_request(vec![Message::text(Role::User, "a")]);
    req.reasoning.thinking = Some(ThinkingConfig {
        mode: ThinkingMode::Enabled,
        budget_tokens: None,
        display: None,
    });
    unsupported(&req);
    let mut req = chat_request(vec![Message::text(Role::User, "a")]);
    req.sampling.stop = vec!["a".into(), "b".into(), "c".into(), "d".into(), "e".into()];
    unsupported(&req);
    // Nothing but system messages leaves no turn to send.
    unsupported(&chat_request(vec![Message::text(Role::System, "s")]));
}

#[test]
fn converted_requests_keep_five_minute_markers_and_drop_only_hints() {
    let mut req = chat_request(vec![
        Message::text(Role::Developer, "d"),
        user(vec![
            text_part("a", Some("5m")),
            text_part("b", Some("")),
            ContentPart::Image {
                source: ImageSource::Url {
                    url: "data:image/PNG;base64,AAAA".into(),
                },
                detail: Some("high".into()),
                cache_control: None,
            },
        ]),
        Message::text(Role::System, "late system"),
    ]);
    req.sampling.seed = Some(3);
    req.sampling.frequency_penalty = Some(0.0);
    req.reasoning.summary = Some("auto".into());
    let body = encode(&req).unwrap();
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "d"}, {"type": "text", "text": "late system"}])
    );
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "a", "cache_control": {"type": "ephemeral", "ttl": "5m"}},
            {"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
        ]}])
    );
    assert_eq!(body["max_tokens"], 100);
    assert!(body.get("seed").is_none() && body.get("output_config").is_none());
}

#[test]
fn effort_is_forwarded_only_when_explicit() {
    let mut req = chat_request(vec![Message::text(Role::User, "a")]);
    req.sampling.max_output_tokens = None;
    let body = encode(&req).unwrap();
    assert!(
        body.get("output_config").is_none(),
        "GP-74: never synthesized"
    );
    assert_eq!(body["max_tokens"], 777, "the default limit");
    assert_eq!(body["stream"], false);
    req.reasoning = Reasoning {
        effort: Some("minimal".into()),
        ..Reasoning::default()
    };
    req.stream = true;
    let body = encode(&req).unwrap();
    assert_eq!(
        body["output_config"],
        json!({"effort": "minimal"}),
        "verbatim, no clamping"
    );
    assert_eq!(body["stream"], true);
}

#[test]
fn native_fields_of_another_protocol_are_not_copied() {
    let mut req = chat_request(vec![Message::text(Role::User, "a")]);
    req.native = Some(NativeFields {
        protocol: Some(Protocol::Chat),
        fields: serde_json::from_value(json!({"metadata": {"k": "v"}, "logit_bias": {"1": 2}}))
            .unwrap(),
        betas: Vec::new(),
    });
    req.end_user = Some("eu".into());
    let body = encode(&req).unwrap();
    assert_eq!(body["metadata"], json!({"user_id": "eu"}));
    assert!(body.get("logit_bias").is_none());
}

#[test]
fn tool_results_share_one_user_turn_and_choices_carry_parallelism() {
    let tool_msg = |id: &str| Message {
        role: Role::Tool,
        content: vec![ContentPart::ToolResult {
            tool_call_id: id.into(),
            content: vec![text_part("r", None)],
            is_error: true,
            cache_control: None,
        }],
        content_was_string: false,
        name: None,
    };
    let mut req = chat_request(vec![
        Message::text(Role::User, "q"),
        Message {
            role: Role::Assistant,
            content: vec![
                ContentPart::Thinking {
                    text: "unsigned".into(),
                    signature: None,
                },
                ContentPart::ToolCall {
                    id: "c1".into(),
                    name: "f".into(),
                    arguments: String::new(),
                },
                ContentPart::ToolCall {
                    id: "c2".into(),
                    name: "f".into(),
                    arguments: "{}".into(),
                },
            ],
            content_was_string: true,
            name: None,
        },
        tool_msg("c1"),
        tool_msg("c2"),
        Message::text(Role::User, "next"),
        tool_msg("c3"),
    ]);
    req.tools = vec![Tool {
        name: "f".into(),
        description: None,
        parameters: json!({"type": "object"}),
        strict: None,
        cache_control: None,
    }];
    req.parallel_tool_calls = Some(false);
    let body = encode(&req).unwrap();
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 5);
    assert_eq!(
        messages[1]["content"],
        json!([
            {"type": "tool_use", "id": "c1", "name": "f", "input": {}},
            {"type": "tool_use", "id": "c2", "name": "f", "input": {}}
        ]),
        "unsigned thinking is dropped"
    );
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": "r", "is_error": true},
            {"type": "tool_result", "tool_use_id": "c2", "content": "r", "is_error": true}
        ]})
    );
    assert_eq!(messages[4]["content"].as_array().unwrap().len(), 1);
    assert_eq!(
        body["tool_choice"],
        json!({"type": "auto", "disable_parallel_tool_use": true})
    );

    for (choice, wire) in [
        (
            ToolChoice::Required,
            json!({"type": "any", "disable_parallel_tool_use": true}),
        ),
        (
            ToolChoice::Tool { name: "f".into() },
            json!({"type": "tool", "name": "f", "disable_parallel_tool_use": true}),
        ),
        (ToolChoice::None, json!({"type": "none"})),
    ] {
        req.tool_choice = Some(choice);
        assert_eq!(encode(&req).unwrap()["tool_choice"], wire);
    }
    req.tools.clear();
    assert!(
        encode(&req).unwrap().get("tool_choice").is_none(),
        "no tools, nothing to choose"
    );
}

#[test]
fn prompt_cache_on_adds_one_marker_only_where_none_exists() {
    let native = |body: &str| {
        let req = parse_request(body.as_bytes()).unwrap();
        let target = SupplierTarget::new("up")
            .with_default_max_output_tokens(Some(777))
            .with_prompt_cache_marker(true);
        let body = SUPPLIER.encode_request(&req, &target).unwrap();
        serde_json::from_slice::<Value>(&body).unwrap()
    };
    // F-08: no markers -> the last cacheable block of the last message, no ttl.
    let body = native(
        r#"{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"thinking","thinking":"t","signature":"s"}]}]}"#,
    );
    assert_eq!(
        body["messages"][1]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert!(
        body["messages"][1]["content"][1]
            .get("cache_control")
            .is_none()
    );
    assert_eq!(body["messages"][0]["content"], "q");
    // A client marker anywhere (here in the system) -> unchanged.
    let body = native(
        r#"{"model":"m","max_tokens":10,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral","ttl":"1h"}}],"messages":[{"role":"user","content":"q"}]}"#,
    );
    assert_eq!(body["messages"][0]["content"], "q");
    assert_eq!(
        body["system"][0]["cache_control"],
        json!({"type": "ephemeral", "ttl": "1h"}),
        "native 1h kept"
    );
    // Passthrough adds nothing (F-10).
    let req = parse_request(
        br#"{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"q"}]}"#,
    )
    .unwrap();
    assert_eq!(encode(&req).unwrap()["messages"][0]["content"], "q");
}

#[test]
fn native_system_turns_stay_in_place() {
    let req = parse_request(br#"{"model":"m","max_tokens":10,"system":"top","messages":[
        {"role":"user","content":"q"},{"role":"system","content":"mid"},{"role":"user","content":"q2"}]}"#).unwrap();
    let body = encode(&req).unwrap();
    assert_eq!(body["system"], "top");
    assert_eq!(
        body["messages"][1],
        json!({"role": "system", "content": "mid"})
    );
}

/// Current Anthropic tool members reach a native route as sent; a request
/// from another protocol has none to carry (issue 29, D-16).
#[test]
fn current_tool_members_are_forwarded_to_a_native_route() {
    let request = parse_request(
        &serde_json::to_vec(&json!({
            "model": "m", "max_tokens": 64,
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [
                {"name": "f", "input_schema": {"type": "object"}, "eager_input_streaming": true, "defer_loading": true, "input_examples": [{"a": 1}]},
                {"name": "g", "input_schema": {"type": "object"}}
            ]
        }))
        .unwrap(),
    )
    .unwrap();
    let sent: Value =
        serde_json::from_slice(&encode_request(&request, "up", 777).unwrap()).unwrap();
    assert_eq!(
        sent["tools"],
        json!([
            {"name": "f", "input_schema": {"type": "object"}, "eager_input_streaming": true, "defer_loading": true, "input_examples": [{"a": 1}]},
            {"name": "g", "input_schema": {"type": "object"}}
        ])
    );

    // The canonical tool has no room for them: any other supplier's codec
    // sends the tool without them (they only stream or load).
    let canonical = serde_json::to_value(&request.tools[0]).unwrap();
    assert_eq!(
        canonical,
        json!({"name": "f", "parameters": {"type": "object"}})
    );
    assert_eq!(
        request.native_only.as_deref(),
        Some("tools[0].input_examples")
    );
}
