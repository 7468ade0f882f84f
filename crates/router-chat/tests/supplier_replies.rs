//! Reading Chat suppliers (JSON and SSE) and the corners of the encoders.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a panic is the failure report"
)]

use router_canonical::request::NativeFields;
use router_canonical::sse::Frame;
use router_canonical::{
    ApiError, BlockDelta, BlockKind, ContentPart, ErrorCode, ImageSource, Message, NanoUsd,
    OutputBlock, Protocol, Request, Response, ResponseFormat, Role, StopReason, StreamEvent, Usage,
};
use router_chat::client::StreamEncoder;
use router_chat::supplier::StreamDecoder;
use router_chat::{
    ChatClient, ChatExtra, ChatSupplier, ClientCodec, ClientStreamEncoder, DecodeError,
    InvalidJson, ReplyContext, StreamContext, StreamEnd, SupplierError, SupplierFailure,
    SupplierStreamDecoder,
};
use router_wire_testkit::codecs;
use router_wire_testkit::frames::{data as frame, data_lines, done};
use serde_json::{Value, json};

/// The codecs as a gateway that bills by usage sets them.
const SUPPLIER: ChatSupplier = ChatSupplier::new().with_require_usage(true);
const CLIENT: ChatClient = ChatClient::new().with_always_include_usage(true);

fn decode_response(body: &[u8]) -> Result<Response, DecodeError> {
    SUPPLIER.decode_reply(body)
}

fn encode_request(req: &Request, model: &str) -> Result<Vec<u8>, ApiError> {
    codecs::encode(&SUPPLIER, req, model, None)
}

fn parse_request(body: &[u8]) -> Result<Request, ApiError> {
    codecs::parse(&CLIENT, &(), body)
}

fn reply(message: Value, finish: Value, usage: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": null}],
        "usage": usage,
        "some_new_field": {"ignored": true}
    }))
    .unwrap()
}

fn usage(prompt: u64, completion: u64) -> Value {
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion})
}

// ---------------------------------------------------------------------------
// decode_response

#[test]
fn finish_reasons_map_to_stop_reasons() {
    for (finish, expected) in [
        (json!("stop"), StopReason::EndTurn),
        (json!("length"), StopReason::MaxTokens),
        (json!("tool_calls"), StopReason::ToolUse),
        (json!("function_call"), StopReason::ToolUse),
        (json!("content_filter"), StopReason::ContentFilter),
        (json!("eos"), StopReason::Other("eos".into())),
        (Value::Null, StopReason::EndTurn),
    ] {
        let body = reply(
            json!({"role": "assistant", "content": "x"}),
            finish.clone(),
            usage(1, 1),
        );
        assert_eq!(
            decode_response(&body).unwrap().stop_reason,
            expected,
            "{finish}"
        );
    }
}

#[test]
fn reply_blocks_come_in_order_with_usage_details() {
    let body = reply(
        json!({
            "role": "assistant",
            "reasoning": "think",
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "refusal": "no",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
        }),
        json!("tool_calls"),
        json!({"prompt_tokens": 10, "completion_tokens": 5,
               "prompt_tokens_details": {"cached_tokens": 4, "audio_tokens": null},
               "completion_tokens_details": {"reasoning_tokens": 3}}),
    );
    let response = decode_response(&body).unwrap();
    assert_eq!(
        response.output,
        vec![
            OutputBlock::Thinking {
                text: "think".into(),
                signature: None
            },
            OutputBlock::Text { text: "ab".into() },
            OutputBlock::Refusal { text: "no".into() },
            OutputBlock::ToolCall {
                id: "c1".into(),
                name: "f".into(),
                arguments: "{}".into()
            },
        ]
    );
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 10,
            output_tokens: 5,
            cache_read_input_tokens: 4,
            cache_creation_input_tokens: 0,
            reasoning_tokens: 3,
        }
    );
}

#[test]
fn empty_text_beside_tool_calls_is_not_a_block() {
    let body = reply(
        json!({"role": "assistant", "content": "",
               "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": ""}}]}),
        json!("tool_calls"),
        usage(1, 1),
    );
    let output = decode_response(&body).unwrap().output;
    assert!(matches!(output.as_slice(), [OutputBlock::ToolCall { .. }]));
}

#[test]
fn invalid_replies_are_typed_errors() {
    type Case = (&'static str, Vec<u8>, fn(&DecodeError) -> bool);
    let cases: Vec<Case> = vec![
        ("not JSON", b"<html>".to_vec(), |e| {
            matches!(e, DecodeError::InvalidJson(_))
        }),
        (
            "wrong shape",
            br#"{"choices": 1}"#.to_vec(),
            |e| matches!(e, DecodeError::InvalidJson(InvalidJson { path, .. }) if path == "choices"),
        ),
        (
            "no choices",
            serde_json::to_vec(&json!({"id": "x", "choices": [], "usage": usage(1, 1)})).unwrap(),
            |e| matches!(e, DecodeError::MissingChoice),
        ),
        (
            "no usage",
            serde_json::to_vec(&json!({"id": "x", "choices": [{"index": 0, "message": {"content": "a"}, "finish_reason": "stop"}]})).unwrap(),
            |e| matches!(e, DecodeError::MissingUsage),
        ),
        (
            "cached above prompt",
            reply(json!({"content": "a"}), json!("stop"),
                  json!({"prompt_tokens": 1, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 2}})),
            |e| matches!(e, DecodeError::InvalidUsage { .. }),
        ),
        (
            "reasoning above completion",
            reply(json!({"content": "a"}), json!("stop"),
                  json!({"prompt_tokens": 1, "completion_tokens": 1, "completion_tokens_details": {"reasoning_tokens": 2}})),
            |e| matches!(e, DecodeError::InvalidUsage { .. }),
        ),
        (
            "negative tokens",
            reply(json!({"content": "a"}), json!("stop"), json!({"prompt_tokens": -1, "completion_tokens": 1})),
            |e| matches!(e, DecodeError::InvalidJson(InvalidJson { path, .. }) if path == "usage.prompt_tokens"),
        ),
        (
            "unknown content part",
            reply(json!({"content": [{"type": "output_audio", "data": ""}]}), json!("stop"), usage(1, 1)),
            |e| matches!(e, DecodeError::UnknownContent { kind, .. } if kind == "output_audio"),
        ),
        (
            "malformed text part",
            reply(json!({"content": [{"type": "text", "text": 1}]}), json!("stop"), usage(1, 1)),
            |e| matches!(e, DecodeError::InvalidJson(InvalidJson { path, .. }) if path == "choices[0].message.content[0].text"),
        ),
        (
            "custom tool call",
            reply(json!({"tool_calls": [{"id": "c", "type": "custom", "function": {"name": "f", "arguments": ""}}]}),
                  json!("tool_calls"), usage(1, 1)),
            |e| matches!(e, DecodeError::UnknownToolCallType { kind } if kind == "custom"),
        ),
    ];
    for (name, body, check) in cases {
        match decode_response(&body) {
            Ok(r) => panic!("{name}: accepted {r:?}"),
            Err(e) => {
                assert!(check(&e), "{name}: {e:?}");
                assert!(
                    SupplierError::from(e).reported().is_none(),
                    "{name}: not the supplier's own failure"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------
// StreamDecoder

fn delta(delta: Value) -> Frame {
    frame(
        json!({"id": "s", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]}),
    )
}

fn usage_frame() -> Frame {
    frame(json!({"id": "s", "model": "m", "choices": [], "usage": usage(3, 4)}))
}

fn decode_all(frames: &[Frame]) -> Result<Vec<StreamEvent>, DecodeError> {
    let mut decoder = StreamDecoder::new(&SUPPLIER);
    let mut events = Vec::new();
    for f in frames {
        events.extend(decoder.decode_frame(f)?);
    }
    Ok(events)
}

#[test]
fn done_without_usage_is_unbillable() {
    let err = decode_all(&[delta(json!({"content": "hi"})), done()]).unwrap_err();
    assert_eq!(err, DecodeError::MissingUsage);
}

#[test]
fn bad_frames_are_errors() {
    let err = decode_all(&[Frame {
        event: None,
        data: "{not json".into(),
    }])
    .unwrap_err();
    assert!(matches!(err, DecodeError::InvalidJson(_)), "{err:?}");

    let mut decoder = StreamDecoder::new(&SUPPLIER);
    decoder.decode_frame(&usage_frame()).unwrap();
    decoder.decode_frame(&done()).unwrap();
    assert!(decoder.is_finished());
    assert_eq!(
        decoder.decode_frame(&delta(json!({"content": "late"}))),
        Err(DecodeError::AfterDone)
    );
}

#[test]
fn a_supplier_error_frame_is_an_upstream_error() {
    let err = decode_all(&[
        delta(json!({"content": "a"})),
        frame(json!({"error": {"message": "overloaded", "type": "server_error", "code": 529}})),
    ])
    .unwrap_err();
    assert_eq!(
        err,
        DecodeError::SupplierError {
            kind: Some("server_error".into()),
            code: Some("529".into()),
            message: Some("overloaded".into()),
        }
    );
    let error = SupplierError::from(err);
    assert_eq!(
        error.reported(),
        Some(
            &SupplierFailure::default()
                .kind("server_error")
                .code("529")
                .message("overloaded")
        )
    );
    assert!(
        !error.to_string().contains("overloaded"),
        "no supplier text in the description (P-08)"
    );
}

#[test]
fn blocks_switch_with_the_kind_of_delta() {
    let events = decode_all(&[
        delta(json!({"role": "assistant", "content": ""})),
        delta(json!({"reasoning": "r"})),
        delta(json!({"content": "a"})),
        delta(json!({"tool_calls": [{"index": 0, "id": "c0", "type": "function", "function": {"name": "f", "arguments": "{"}}]})),
        delta(json!({"content": "b"})),
        delta(json!({"refusal": "no"})),
        frame(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "content_filter"}], "usage": usage(3, 4)})),
        done(),
    ])
    .unwrap();
    let starts: Vec<(usize, BlockKind)> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::BlockStart { index, block } => Some((*index, block.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        starts,
        vec![
            (0, BlockKind::Thinking),
            (1, BlockKind::Text),
            (
                2,
                BlockKind::ToolCall {
                    id: "c0".into(),
                    name: "f".into()
                }
            ),
            (3, BlockKind::Text),
            (4, BlockKind::Refusal),
        ]
    );
    let stops = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::BlockStop { .. }))
        .count();
    assert_eq!(stops, 5);
    assert!(matches!(
        events.last(),
        Some(StreamEvent::Finish {
            stop_reason: StopReason::ContentFilter,
            ..
        })
    ));
}

#[test]
fn tool_arguments_before_the_id_are_held_back() {
    // Some suppliers send the name first and the id later, or no id at all.
    let events = decode_all(&[
        delta(
            json!({"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": "{\"a\""}}]}),
        ),
        delta(json!({"tool_calls": [{"index": 0, "id": "c0", "function": {"arguments": ":1}"}}]})),
        delta(json!({"tool_calls": [{"index": 1, "function": {"name": "g", "arguments": "{}"}}]})),
        usage_frame(),
        done(),
    ])
    .unwrap();
    let relevant: Vec<&StreamEvent> = events
        .iter()
        .filter(|e| !matches!(e, StreamEvent::Start { .. } | StreamEvent::Finish { .. }))
        .collect();
    assert_eq!(
        relevant,
        vec![
            &StreamEvent::BlockStart {
                index: 0,
                block: BlockKind::ToolCall {
                    id: "c0".into(),
                    name: "f".into()
                }
            },
            &StreamEvent::Delta {
                index: 0,
                delta: BlockDelta::ToolArguments("{\"a\":1}".into())
            },
            &StreamEvent::BlockStop { index: 0 },
            &StreamEvent::BlockStart {
                index: 1,
                block: BlockKind::ToolCall {
                    id: "call_1".into(),
                    name: "g".into()
                }
            },
            &StreamEvent::Delta {
                index: 1,
                delta: BlockDelta::ToolArguments("{}".into())
            },
            &StreamEvent::BlockStop { index: 1 },
        ]
    );
    assert!(matches!(
        events.last(),
        Some(StreamEvent::Finish {
            stop_reason: StopReason::ToolUse,
            ..
        })
    ));
}

#[test]
fn calls_without_index_are_told_apart_by_id() {
    let events = decode_all(&[
        delta(json!({"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}]})),
        delta(json!({"tool_calls": [{"id": "b", "function": {"name": "g", "arguments": "{}"}}]})),
        usage_frame(),
        done(),
    ])
    .unwrap();
    let ids: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::BlockStart {
                block: BlockKind::ToolCall { id, .. },
                ..
            } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["a", "b"]);
}

#[test]
fn broken_tool_streams_are_errors() {
    let nameless = decode_all(&[
        delta(json!({"tool_calls": [{"index": 0, "id": "c0", "function": {"arguments": "{}"}}]})),
        usage_frame(),
        done(),
    ]);
    assert_eq!(nameless, Err(DecodeError::IncompleteToolCall { index: 0 }));

    let interleaved = decode_all(&[
        delta(json!({"tool_calls": [{"index": 0, "id": "c0", "function": {"name": "f"}}]})),
        delta(json!({"tool_calls": [{"index": 1, "id": "c1", "function": {"name": "g"}}]})),
        delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]})),
    ]);
    assert_eq!(
        interleaved,
        Err(DecodeError::InterleavedToolCall { index: 0 })
    );
}

#[test]
fn keep_alive_and_empty_frames_are_skipped() {
    let events = decode_all(&[
        Frame {
            event: None,
            data: String::new(),
        },
        usage_frame(),
        done(),
    ])
    .unwrap();
    assert!(matches!(events.first(), Some(StreamEvent::Start { .. })));
    assert_eq!(events.len(), 2);
}

// ---------------------------------------------------------------------------
// StreamEncoder

fn encoder() -> StreamEncoder {
    CLIENT.stream_encoder(
        StreamContext::new("chatcmpl-x", "public/model", 7),
        ChatExtra::default(),
    )
}

#[test]
fn the_first_chunk_carries_the_role_even_without_start() {
    let mut enc = encoder();
    let mut out = Vec::new();
    enc.event(
        &StreamEvent::Delta {
            index: 0,
            delta: BlockDelta::Text("hi".into()),
        },
        &mut out,
    );
    enc.event(
        &StreamEvent::Delta {
            index: 0,
            delta: BlockDelta::Text("!".into()),
        },
        &mut out,
    );
    let chunks: Vec<Value> = data_lines(&out)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        chunks[0]["choices"][0]["delta"],
        json!({"role": "assistant", "content": "hi"})
    );
    assert_eq!(chunks[1]["choices"][0]["delta"], json!({"content": "!"}));
    assert_eq!(chunks[1]["choices"][0]["finish_reason"], Value::Null);
}

#[test]
fn events_without_a_chat_form_write_nothing() {
    let mut enc = encoder();
    let mut out = Vec::new();
    enc.event(
        &StreamEvent::Start {
            id: "s".into(),
            model: "m".into(),
        },
        &mut out,
    );
    out.clear();
    for event in [
        StreamEvent::BlockStart {
            index: 0,
            block: BlockKind::Thinking,
        },
        StreamEvent::Delta {
            index: 0,
            delta: BlockDelta::Signature("sig".into()),
        },
        StreamEvent::BlockStop { index: 0 },
        StreamEvent::Usage {
            usage: Usage::default(),
        },
        StreamEvent::Delta {
            index: 9,
            delta: BlockDelta::ToolArguments("{}".into()),
        },
    ] {
        enc.event(&event, &mut out);
    }
    assert!(out.is_empty(), "{}", String::from_utf8_lossy(&out));
}

#[test]
fn a_late_failure_is_an_error_frame_without_done() {
    let mut out = Vec::new();
    encoder().error(
        &ApiError::new(ErrorCode::UpstreamError, "the supplier failed"),
        &mut out,
    );
    let lines = data_lines(&out);
    assert_eq!(lines.len(), 1);
    assert_eq!(
        serde_json::from_str::<Value>(&lines[0]).unwrap(),
        json!({"error": {"message": "the supplier failed", "type": "api_error", "param": null, "code": "upstream_error"}})
    );
}

#[test]
fn finish_refusal_maps_to_content_filter() {
    let mut out = Vec::new();
    encoder().finish(
        &StreamEnd::new(
            &StopReason::Refusal,
            &Usage {
                input_tokens: 1,
                output_tokens: 2,
                ..Usage::default()
            },
        )
        .with_cost(Some(NanoUsd(1_000_000_000))),
        &mut out,
    );
    let lines = data_lines(&out);
    assert_eq!(lines.len(), 3);
    let finish: Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(finish["choices"][0]["finish_reason"], "content_filter");
    let usage: Value = serde_json::from_str(&lines[1]).unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["cost"], json!(1));
    assert_eq!(lines[2], "[DONE]");
}

// ---------------------------------------------------------------------------
// encode_request / encode_response corners

fn request_with(messages: Vec<Message>) -> Request {
    Request {
        model: "m".into(),
        messages,
        ..Request::default()
    }
}

fn upstream(req: &Request) -> Value {
    serde_json::from_slice(&encode_request(req, "up").unwrap()).unwrap()
}

#[test]
fn what_chat_cannot_carry_is_an_unsupported_conversion() {
    let upload = request_with(vec![Message {
        role: Role::User,
        content: vec![ContentPart::Image {
            source: ImageSource::Upload {
                file_id: "file_1".into(),
                param: String::new(),
            },
            detail: None,
            cache_control: None,
        }],
        content_was_string: false,
        name: None,
    }]);
    let foreign = request_with(vec![Message {
        role: Role::User,
        content: vec![ContentPart::Opaque {
            protocol: Protocol::Messages,
            value: json!({"type": "search_result"}),
        }],
        content_was_string: false,
        name: None,
    }]);
    let tool_without_result = request_with(vec![Message::text(Role::Tool, "x")]);
    for req in [upload, foreign, tool_without_result] {
        let err = encode_request(&req, "up").unwrap_err();
        assert_eq!(err.code, ErrorCode::UnsupportedConversion, "{err:?}");
    }
}

#[test]
fn a_messages_style_turn_is_split_into_tool_messages_then_user_text() {
    let req = request_with(vec![
        Message {
            role: Role::Assistant,
            content: vec![
                ContentPart::Thinking {
                    text: "hmm".into(),
                    signature: Some("sig".into()),
                },
                ContentPart::ToolCall {
                    id: "t1".into(),
                    name: "f".into(),
                    arguments: "{}".into(),
                },
            ],
            content_was_string: false,
            name: None,
        },
        Message {
            role: Role::User,
            content: vec![
                ContentPart::ToolResult {
                    tool_call_id: "t1".into(),
                    content: vec![ContentPart::Text {
                        text: "42".into(),
                        cache_control: None,
                    }],
                    is_error: true,
                    cache_control: None,
                },
                ContentPart::Text {
                    text: "thanks".into(),
                    cache_control: None,
                },
            ],
            content_was_string: false,
            name: None,
        },
    ]);
    assert_eq!(
        upstream(&req)["messages"],
        json!([
            {"role": "assistant", "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "content": "42", "tool_call_id": "t1"},
            {"role": "user", "content": [{"type": "text", "text": "thanks"}]}
        ])
    );
}

#[test]
fn only_chat_native_fields_are_forwarded() {
    let mut req = request_with(vec![Message::text(Role::User, "hi")]);
    req.native = Some(NativeFields {
        betas: Vec::new(),
        protocol: Some(Protocol::Messages),
        fields: serde_json::from_value(json!({"context_management": {}})).unwrap(),
    });
    req.response_format = Some(ResponseFormat::JsonSchema {
        name: "s".into(),
        schema: Value::Null,
        strict: None,
        description: None,
    });
    let body = upstream(&req);
    assert!(body.get("context_management").is_none());
    assert_eq!(
        body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "s"}})
    );

    // A Chat-native map that somehow holds a non-vetted key does not leak it.
    req.native = Some(NativeFields {
        betas: Vec::new(),
        protocol: Some(Protocol::Chat),
        fields: serde_json::from_value(json!({"store": true, "verbosity": "low"})).unwrap(),
    });
    let body = upstream(&req);
    assert!(body.get("store").is_none());
    assert_eq!(body["verbosity"], "low");
}

#[test]
fn store_service_tier_and_n_are_never_forwarded() {
    let req = parse_request(
        br#"{"model":"m","messages":[{"role":"user","content":"hi"}],
             "store":true,"service_tier":"priority","n":1,"web_search_options":{},"logprobs":true}"#,
    )
    .unwrap();
    let body = upstream(&req);
    for key in ["store", "service_tier", "n", "web_search_options"] {
        assert!(body.get(key).is_none(), "{key} forwarded");
    }
    assert_eq!(body["logprobs"], true);
}

#[test]
fn several_choices_are_not_encoded() {
    let mut req =
        parse_request(br#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#).unwrap();
    req.sampling.choices = Some(2);
    let error = codecs::encode(&ChatSupplier::default(), &req, "up", None).unwrap_err();
    assert_eq!(error.code, ErrorCode::UnsupportedConversion);
    assert_eq!(error.param.as_deref(), Some("n"));
}

#[test]
fn response_json_shapes() {
    let response = Response {
        id: "up".into(),
        model: "up-model".into(),
        output: vec![
            OutputBlock::RedactedThinking { data: "x".into() },
            OutputBlock::Refusal {
                text: "I can't".into(),
            },
        ],
        stop_reason: StopReason::Other("guardrail".into()),
        stop_sequence: None,
        usage: Usage::default(),
        created: 0,
    };
    let ctx = ReplyContext::new("chatcmpl-r", "public", 5).with_cost(Some(NanoUsd::ZERO));
    let body: Value =
        serde_json::from_slice(&CLIENT.encode_response(&response, &ctx, &ChatExtra::default()))
            .unwrap();
    assert_eq!(
        body["choices"][0],
        json!({
            "index": 0,
            "message": {"role": "assistant", "content": null, "refusal": "I can't"},
            "finish_reason": "guardrail",
            "logprobs": null
        })
    );
    assert_eq!(body["usage"]["cost"], json!(0));
}
