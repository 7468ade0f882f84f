//! Reading Responses suppliers (JSON and SSE) and the corners of the encoders.
//!
//! Long by design: the case tables of reply and stream decoding, and the encoder corners.

#![expect(
    clippy::unwrap_used,
    reason = "helpers outside #[test] functions: a panic is the failure report"
)]

use router_canonical::request::NativeFields;
use router_canonical::sse::{Decoder, Frame};
use router_canonical::{
    ApiError, BlockDelta, BlockKind, CacheControl, ContentPart, ErrorCode, ImageSource, Message,
    NanoUsd, OutputBlock, ProductCode, Protocol, Request, Response, Role, StopReason, StreamEvent,
    SupplierFailure, ThinkingConfig, ThinkingMode, Tool, Usage,
};
use router_responses::{
    ClientCodec, ClientStreamEncoder, DecodeError, InvalidJson, ReplyContext, ResponsesClient,
    ResponsesSupplier, StreamContext, StreamEncoder, StreamEnd, SupplierError,
};
use router_wire_testkit::codecs;
use router_wire_testkit::frames::typed as event;
use serde_json::{Value, json};

/// The supplier codec as a gateway that bills by usage sets it.
const SUPPLIER: ResponsesSupplier = ResponsesSupplier::new().with_require_usage(true);

fn parse_request(body: &[u8]) -> Result<Request, ApiError> {
    codecs::parse(&ResponsesClient, &(), body)
}

fn encode_request(request: &Request, model: &str) -> Result<Vec<u8>, ApiError> {
    codecs::encode(&SUPPLIER, request, model, None)
}

fn decode_response(body: &[u8]) -> Result<Response, DecodeError> {
    SUPPLIER.decode_reply(body)
}

fn encode_response(response: &Response, ctx: &ReplyContext<'_>) -> Vec<u8> {
    ResponsesClient.encode_response(response, ctx, &Default::default())
}

fn error_body(error: &ApiError) -> Vec<u8> {
    ResponsesClient.error_body(error)
}

/// End a client stream with a charge.
fn finish(
    encoder: &mut StreamEncoder,
    stop_reason: &StopReason,
    usage: &Usage,
    cost: NanoUsd,
    out: &mut Vec<u8>,
) {
    let end = StreamEnd::new(stop_reason, usage).with_cost(Some(cost));
    encoder.finish(&end, out);
}

/// The kind a gateway decides on: `reported`, `unsupported` or `invalid`.
fn kind(err: &DecodeError) -> &'static str {
    match SupplierError::from(err.clone()) {
        SupplierError::Reported(_) => "reported",
        SupplierError::Unsupported(_) => "unsupported",
        _ => "invalid",
    }
}

fn usage(input: u64, output: u64) -> Value {
    json!({"input_tokens": input, "input_tokens_details": {"cached_tokens": 0},
           "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
           "total_tokens": input + output})
}

fn reply(status: &str, output: Value, usage: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "id": "resp_1", "object": "response", "created_at": 1, "status": status,
        "model": "m", "output": output, "usage": usage,
        "some_new_field": {"ignored": true}
    }))
    .unwrap()
}

fn message(text: &str) -> Value {
    json!({"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
           "content": [{"type": "output_text", "text": text, "annotations": []}]})
}

// ---------------------------------------------------------------------------
// decode_response

#[test]
fn statuses_map_to_stop_reasons() {
    let text = json!([message("x")]);
    let call = json!([{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"}]);
    for (status, details, output, expected) in [
        ("completed", Value::Null, &text, StopReason::EndTurn),
        ("completed", Value::Null, &call, StopReason::ToolUse),
        (
            "incomplete",
            json!({"reason": "max_output_tokens"}),
            &text,
            StopReason::MaxTokens,
        ),
        (
            "incomplete",
            json!({"reason": "content_filter"}),
            &text,
            StopReason::ContentFilter,
        ),
        (
            "incomplete",
            json!({"reason": "new_reason"}),
            &text,
            StopReason::Other("new_reason".into()),
        ),
        (
            "incomplete",
            Value::Null,
            &text,
            StopReason::Other("incomplete".into()),
        ),
    ] {
        let mut body: Value =
            serde_json::from_slice(&reply(status, output.clone(), usage(1, 1))).unwrap();
        body["incomplete_details"] = details.clone();
        let response = decode_response(&serde_json::to_vec(&body).unwrap()).unwrap();
        assert_eq!(response.stop_reason, expected, "{status} {details}");
    }
}

#[test]
fn output_items_become_blocks_in_order_with_usage_details() {
    let body = reply(
        "completed",
        json!([
            {"type": "reasoning", "id": "rs_1", "summary": [
                {"type": "summary_text", "text": "a"}, {"type": "summary_text", "text": "b"}],
             "encrypted_content": "enc"},
            {"type": "reasoning", "id": "rs_2", "summary": []},
            {"type": "reasoning", "id": "rs_3", "summary": [],
             "content": [{"type": "reasoning_text", "text": "raw"}]},
            {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant", "content": [
                {"type": "output_text", "text": "t", "annotations": [{"type": "url_citation"}], "logprobs": []},
                {"type": "refusal", "refusal": "no"}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f",
             "arguments": "{\"a\":1}", "status": "completed"}
        ]),
        json!({"input_tokens": 10, "input_tokens_details": {"cached_tokens": 4},
               "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 3},
               "total_tokens": 15, "cost": 99}),
    );
    let response = decode_response(&body).unwrap();
    assert_eq!(
        response.output,
        vec![
            OutputBlock::Thinking {
                text: "a\n\nb".into(),
                signature: Some("enc".into())
            },
            // rs_2 carries nothing: no block.
            OutputBlock::Thinking {
                text: "raw".into(),
                signature: None
            },
            OutputBlock::Text { text: "t".into() },
            OutputBlock::Refusal { text: "no".into() },
            OutputBlock::ToolCall {
                id: "call_1".into(),
                name: "f".into(),
                arguments: "{\"a\":1}".into()
            },
        ]
    );
    assert_eq!(response.stop_reason, StopReason::ToolUse);
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
fn lenient_where_suppliers_differ() {
    // Float created_at, null token details, no status, unknown fields everywhere.
    let body = serde_json::to_vec(&json!({
        "id": "r", "created_at": 1700000000.5, "model": "m",
        "output": [{"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "x", "extra": 1}], "extra": 2}],
        "usage": {"input_tokens": 3, "input_tokens_details": null, "output_tokens": 2,
                  "output_tokens_details": {"reasoning_tokens": null}},
        "tools": [{"type": "web_search"}], "tool_choice": {"type": "allowed_tools"},
        "text": {"format": {"type": "grammar"}}
    }))
    .unwrap();
    let response = decode_response(&body).unwrap();
    assert_eq!(response.created, 1_700_000_000);
    assert_eq!(response.text(), "x");
    assert_eq!(response.usage.input_tokens, 3);
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
            br#"{"output": 1}"#.to_vec(),
            |e| matches!(e, DecodeError::InvalidJson(InvalidJson { path, .. }) if path == "output"),
        ),
        (
            "no usage",
            serde_json::to_vec(&json!({"status": "completed", "output": [message("a")]})).unwrap(),
            |e| matches!(e, DecodeError::MissingUsage),
        ),
        (
            "cached above input",
            reply(
                "completed",
                json!([message("a")]),
                json!({"input_tokens": 1, "output_tokens": 1, "input_tokens_details": {"cached_tokens": 2}}),
            ),
            |e| matches!(e, DecodeError::InvalidUsage { .. }),
        ),
        (
            "reasoning above output",
            reply(
                "completed",
                json!([message("a")]),
                json!({"input_tokens": 1, "output_tokens": 1, "output_tokens_details": {"reasoning_tokens": 2}}),
            ),
            |e| matches!(e, DecodeError::InvalidUsage { .. }),
        ),
        (
            "negative tokens",
            reply(
                "completed",
                json!([message("a")]),
                json!({"input_tokens": -1, "output_tokens": 1}),
            ),
            |e| matches!(e, DecodeError::InvalidJson(InvalidJson { path, .. }) if path == "usage.input_tokens"),
        ),
        (
            "unknown output item (CF-08)",
            reply(
                "completed",
                json!([{"type": "web_search_call", "id": "ws_1", "status": "completed"}]),
                usage(1, 1),
            ),
            |e| matches!(e, DecodeError::UnknownOutputItem { kind, path } if kind == "web_search_call" && path == "output[0]"),
        ),
        (
            "unknown content part (CF-08)",
            reply(
                "completed",
                json!([{"type": "message", "role": "assistant",
                                        "content": [{"type": "output_audio", "data": ""}]}]),
                usage(1, 1),
            ),
            |e| matches!(e, DecodeError::UnknownContent { kind, path } if kind == "output_audio" && path == "output[0].content[0]"),
        ),
        (
            "malformed text part",
            reply(
                "completed",
                json!([{"type": "message", "content": [{"type": "output_text", "text": 1}]}]),
                usage(1, 1),
            ),
            |e| matches!(e, DecodeError::InvalidJson(InvalidJson { path, .. }) if path == "output[0].content[0].text"),
        ),
        (
            "function call without name",
            reply(
                "completed",
                json!([{"type": "function_call", "call_id": "c", "arguments": ""}]),
                usage(1, 1),
            ),
            |e| matches!(e, DecodeError::InvalidJson(InvalidJson { path, .. }) if path == "output[0].name"),
        ),
        (
            "still in progress",
            reply("in_progress", json!([]), usage(1, 1)),
            |e| matches!(e, DecodeError::UnexpectedStatus { status } if status == "in_progress"),
        ),
    ];
    for (name, body, check) in cases {
        match decode_response(&body) {
            Ok(r) => panic!("{name}: accepted {r:?}"),
            Err(e) => {
                assert!(check(&e), "{name}: {e:?}");
                let expected = if matches!(
                    e,
                    DecodeError::UnknownOutputItem { .. } | DecodeError::UnknownContent { .. }
                ) {
                    "unsupported"
                } else {
                    "invalid"
                };
                assert_eq!(kind(&e), expected, "{name}");
            }
        }
    }
}

#[test]
fn a_failed_reply_is_the_suppliers_error() {
    let body = serde_json::to_vec(&json!({
        "id": "r", "status": "failed", "model": "m", "output": [],
        "error": {"code": "server_error", "message": "secret upstream detail"}, "usage": null
    }))
    .unwrap();
    let err = decode_response(&body).unwrap_err();
    assert_eq!(
        err,
        DecodeError::SupplierError {
            kind: None,
            code: Some("server_error".into()),
            message: Some("secret upstream detail".into())
        }
    );
    // The supplier's own failure, kept as data (P-08: the gateway decides
    // what a client sees; the text is never in the error's own message).
    assert!(
        !err.to_string().contains("secret"),
        "P-08: no supplier text"
    );
    assert_eq!(
        SupplierError::from(err),
        SupplierError::Reported(
            SupplierFailure::default()
                .code("server_error")
                .message("secret upstream detail")
        )
    );
}

// ---------------------------------------------------------------------------
// StreamDecoder

fn created() -> Frame {
    event(json!({"type": "response.created", "sequence_number": 0,
                 "response": {"id": "resp_s", "model": "m", "status": "in_progress", "output": []}}))
}

fn completed(status: &str, details: Value) -> Frame {
    event(
        json!({"type": format!("response.{status}"), "sequence_number": 99,
                 "response": {"id": "resp_s", "model": "m", "status": status,
                              "incomplete_details": details, "output": [], "usage": usage(3, 4)}}),
    )
}

fn decode_all(frames: &[Frame]) -> Result<Vec<StreamEvent>, DecodeError> {
    let mut decoder = SUPPLIER.decoder();
    let mut events = Vec::new();
    for frame in frames {
        events.extend(decoder.decode_frame(frame)?);
    }
    assert!(decoder.is_finished());
    Ok(events)
}

fn text_delta(oi: usize, ci: usize, delta: &str) -> Frame {
    event(
        json!({"type": "response.output_text.delta", "item_id": "msg", "output_index": oi,
                 "content_index": ci, "delta": delta}),
    )
}

#[test]
fn unknown_events_are_dropped_and_text_streams() {
    let events = decode_all(&[
        Frame {
            event: None,
            data: String::new(),
        },
        created(),
        event(json!({"type": "response.in_progress", "response": {"id": "resp_s"}})),
        event(json!({"type": "response.output_item.added", "output_index": 0,
                     "item": {"type": "message", "id": "msg", "role": "assistant", "content": []}})),
        text_delta(0, 0, "He"),
        event(json!({"type": "response.output_text.annotation.added", "output_index": 0, "annotation": {}})),
        event(json!({"type": "response.some_future_event", "anything": [1, 2]})),
        event(json!({"type": "keepalive"})),
        text_delta(0, 0, "llo"),
        event(json!({"type": "response.output_text.done", "output_index": 0, "content_index": 0, "text": "Hello"})),
        event(json!({"type": "response.content_part.done", "output_index": 0, "content_index": 0,
                     "part": {"type": "output_text", "text": "Hello"}})),
        event(json!({"type": "response.output_item.done", "output_index": 0,
                     "item": {"type": "message", "id": "msg", "role": "assistant",
                              "content": [{"type": "output_text", "text": "Hello"}]}})),
        completed("completed", Value::Null),
        Frame {
            event: None,
            data: "[DONE]".into(),
        },
    ])
    .unwrap();
    assert_eq!(
        events,
        vec![
            StreamEvent::Start {
                id: "resp_s".into(),
                model: "m".into()
            },
            StreamEvent::BlockStart {
                index: 0,
                block: BlockKind::Text
            },
            StreamEvent::Delta {
                index: 0,
                delta: BlockDelta::Text("He".into())
            },
            StreamEvent::Delta {
                index: 0,
                delta: BlockDelta::Text("llo".into())
            },
            StreamEvent::BlockStop { index: 0 },
            StreamEvent::Finish {
                stop_reason: StopReason::EndTurn,
                stop_sequence: None,
                usage: Usage {
                    input_tokens: 3,
                    output_tokens: 4,
                    ..Usage::default()
                }
            },
        ]
    );
}

#[test]
fn incomplete_stream_is_max_tokens() {
    let events = decode_all(&[
        created(),
        text_delta(0, 0, "cut"),
        completed("incomplete", json!({"reason": "max_output_tokens"})),
    ])
    .unwrap();
    assert!(matches!(
        events.last(),
        Some(StreamEvent::Finish {
            stop_reason: StopReason::MaxTokens,
            ..
        })
    ));
    // The open block was closed before the finish.
    assert_eq!(
        events[events.len() - 2],
        StreamEvent::BlockStop { index: 0 }
    );
}

#[test]
fn text_only_in_done_events_is_not_lost() {
    let events = decode_all(&[
        created(),
        // No content_part.added and no deltas: the whole part arrives at done.
        event(json!({"type": "response.content_part.done", "output_index": 0, "content_index": 0,
                     "part": {"type": "refusal", "refusal": "No."}})),
        // A message whose parts only appear in output_item.done.
        event(json!({"type": "response.output_item.done", "output_index": 1,
                     "item": {"type": "message", "role": "assistant",
                              "content": [{"type": "output_text", "text": "late"}]}})),
        // A call whose arguments only arrive in .done.
        event(json!({"type": "response.output_item.added", "output_index": 2,
                     "item": {"type": "function_call", "call_id": "c1", "name": "f", "arguments": ""}})),
        event(json!({"type": "response.function_call_arguments.done", "output_index": 2, "arguments": "{}"})),
        event(json!({"type": "response.output_item.done", "output_index": 2,
                     "item": {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}})),
        completed("completed", Value::Null),
    ])
    .unwrap();
    let deltas: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Delta { index, delta } => Some((*index, delta.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        deltas,
        vec![
            (0, BlockDelta::Refusal("No.".into())),
            (1, BlockDelta::Text("late".into())),
            (2, BlockDelta::ToolArguments("{}".into())),
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
fn reasoning_streams_as_thinking_with_its_signature() {
    let rs = |oi: usize| json!({"type": "reasoning", "id": format!("rs_{oi}"), "summary": []});
    let events = decode_all(&[
        created(),
        // An empty reasoning item: no block at all.
        event(json!({"type": "response.output_item.added", "output_index": 0, "item": rs(0)})),
        event(json!({"type": "response.output_item.done", "output_index": 0, "item": rs(0)})),
        // Encrypted content only: a thinking block with just a signature.
        event(json!({"type": "response.output_item.added", "output_index": 1, "item": rs(1)})),
        event(json!({"type": "response.output_item.done", "output_index": 1,
                     "item": {"type": "reasoning", "summary": [], "encrypted_content": "e1"}})),
        // Raw reasoning text (gpt-oss style suppliers).
        event(json!({"type": "response.output_item.added", "output_index": 2, "item": rs(2)})),
        event(json!({"type": "response.reasoning_text.delta", "output_index": 2, "content_index": 0, "delta": "hmm"})),
        event(json!({"type": "response.output_item.done", "output_index": 2,
                     "item": {"type": "reasoning", "summary": [],
                              "content": [{"type": "reasoning_text", "text": "hmm"}]}})),
        completed("completed", Value::Null),
    ])
    .unwrap();
    assert_eq!(
        events[1..events.len() - 1],
        [
            StreamEvent::BlockStart {
                index: 0,
                block: BlockKind::Thinking
            },
            StreamEvent::Delta {
                index: 0,
                delta: BlockDelta::Signature("e1".into())
            },
            StreamEvent::BlockStop { index: 0 },
            StreamEvent::BlockStart {
                index: 1,
                block: BlockKind::Thinking
            },
            StreamEvent::Delta {
                index: 1,
                delta: BlockDelta::Thinking("hmm".into())
            },
            StreamEvent::BlockStop { index: 1 },
        ]
    );
}

#[test]
fn the_sse_event_name_stands_in_for_a_missing_type() {
    let frame = Frame {
        event: Some("response.output_text.delta".into()),
        data: json!({"output_index": 0, "content_index": 0, "delta": "x"}).to_string(),
    };
    let events = decode_all(&[created(), frame, completed("completed", Value::Null)]).unwrap();
    assert!(events.contains(&StreamEvent::Delta {
        index: 0,
        delta: BlockDelta::Text("x".into())
    }));
}

#[test]
fn broken_streams_are_typed_errors() {
    type Case = (&'static str, Vec<Frame>, fn(&DecodeError) -> bool);
    let cases: Vec<Case> = vec![
        (
            "response.failed",
            vec![
                created(),
                event(
                    json!({"type": "response.failed", "response": {"id": "r", "status": "failed",
                             "error": {"code": "server_error", "message": "boom"}}}),
                ),
            ],
            |e| matches!(e, DecodeError::SupplierError { code: Some(c), .. } if c == "server_error"),
        ),
        (
            "error event",
            vec![
                created(),
                event(
                    json!({"type": "error", "code": "rate_limit_exceeded", "message": "slow down", "param": null}),
                ),
            ],
            |e| matches!(e, DecodeError::SupplierError { code: Some(c), message: Some(_), .. } if c == "rate_limit_exceeded"),
        ),
        (
            "nested error event",
            vec![event(
                json!({"type": "error", "error": {"type": "server_error", "code": 500, "message": "x"}}),
            )],
            |e| matches!(e, DecodeError::SupplierError { kind: Some(k), code: Some(c), .. } if k == "server_error" && c == "500"),
        ),
        (
            "unknown output item (CF-08)",
            vec![
                created(),
                event(
                    json!({"type": "response.output_item.added", "output_index": 0,
                             "item": {"type": "web_search_call", "id": "ws", "status": "in_progress"}}),
                ),
            ],
            |e| matches!(e, DecodeError::UnknownOutputItem { kind, .. } if kind == "web_search_call"),
        ),
        (
            "unknown content part (CF-08)",
            vec![
                created(),
                event(
                    json!({"type": "response.content_part.added", "output_index": 0, "content_index": 0,
                             "part": {"type": "output_audio"}}),
                ),
            ],
            |e| matches!(e, DecodeError::UnknownContent { kind, path } if kind == "output_audio" && path == "output[0].content[0]"),
        ),
        (
            "completed without usage",
            vec![
                created(),
                event(
                    json!({"type": "response.completed", "response": {"id": "r", "status": "completed"}}),
                ),
            ],
            |e| matches!(e, DecodeError::MissingUsage),
        ),
        (
            "delta after its part closed",
            vec![
                created(),
                text_delta(0, 0, "a"),
                event(
                    json!({"type": "response.content_part.done", "output_index": 0, "content_index": 0,
                             "part": {"type": "output_text", "text": "a"}}),
                ),
                text_delta(0, 0, "b"),
            ],
            |e| {
                matches!(
                    e,
                    DecodeError::OutOfOrder {
                        output_index: Some(0),
                        ..
                    }
                )
            },
        ),
        (
            "arguments for a call that never opened",
            vec![
                created(),
                event(
                    json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{"}),
                ),
            ],
            |e| matches!(e, DecodeError::OutOfOrder { .. }),
        ),
        (
            "delta without output_index",
            vec![
                created(),
                event(json!({"type": "response.output_text.delta", "delta": "x"})),
            ],
            |e| {
                matches!(
                    e,
                    DecodeError::OutOfOrder {
                        output_index: None,
                        ..
                    }
                )
            },
        ),
        (
            "frame after the finish",
            vec![
                created(),
                completed("completed", Value::Null),
                text_delta(0, 0, "late"),
            ],
            |e| matches!(e, DecodeError::AfterFinish),
        ),
        (
            "not JSON",
            vec![Frame {
                event: None,
                data: "{oops".into(),
            }],
            |e| matches!(e, DecodeError::InvalidJson(_)),
        ),
        (
            "malformed member",
            vec![event(
                json!({"type": "response.output_text.delta", "output_index": "zero"}),
            )],
            |e| matches!(e, DecodeError::InvalidJson(InvalidJson { path, .. }) if path == "output_index"),
        ),
    ];
    for (name, frames, check) in cases {
        let mut decoder = SUPPLIER.decoder();
        let mut result = Ok(());
        for frame in &frames {
            if let Err(err) = decoder.decode_frame(frame) {
                result = Err(err);
                break;
            }
        }
        match result {
            Ok(()) => panic!("{name}: accepted"),
            Err(e) => {
                assert!(check(&e), "{name}: {e:?}");
                let expected = match e {
                    DecodeError::SupplierError { .. } => "reported",
                    DecodeError::UnknownOutputItem { .. } | DecodeError::UnknownContent { .. } => {
                        "unsupported"
                    }
                    _ => "invalid",
                };
                assert_eq!(kind(&e), expected, "{name}");
            }
        }
    }
}

// ---------------------------------------------------------------------------
// encode_request from other protocols

fn chat_like(messages: Vec<Message>) -> Request {
    Request {
        model: "m".into(),
        messages,
        inbound: Some(Protocol::Chat),
        ..Request::default()
    }
}

fn encoded(req: &Request) -> Value {
    serde_json::from_slice(&encode_request(req, "up").unwrap()).unwrap()
}

#[test]
fn conversions_keep_meaning_and_drop_only_annotations() {
    let marker = Some(CacheControl {
        kind: "ephemeral".into(),
        ttl: None,
    });
    let mut req = chat_like(vec![
        Message::text(Role::System, "sys"),
        Message {
            role: Role::User,
            content: vec![
                ContentPart::Text {
                    text: "look".into(),
                    cache_control: marker.clone(),
                },
                ContentPart::Image {
                    source: ImageSource::Base64 {
                        media_type: "image/png".into(),
                        data: "AAAA".into(),
                    },
                    detail: None,
                    cache_control: None,
                },
            ],
            content_was_string: false,
            name: Some("alice".into()),
        },
        Message {
            role: Role::Assistant,
            content: vec![
                ContentPart::Thinking {
                    text: "t".into(),
                    signature: Some("anthropic-sig".into()),
                },
                ContentPart::RedactedThinking { data: "r".into() },
                ContentPart::Text {
                    text: "calling".into(),
                    cache_control: None,
                },
                ContentPart::ToolCall {
                    id: "toolu_1".into(),
                    name: "f".into(),
                    arguments: "{}".into(),
                },
            ],
            content_was_string: false,
            name: None,
        },
        // A Messages-style user turn: tool result, then text.
        Message {
            role: Role::User,
            content: vec![
                ContentPart::ToolResult {
                    tool_call_id: "toolu_1".into(),
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
    req.tools = vec![Tool {
        name: "f".into(),
        description: None,
        parameters: json!({"type": "object"}),
        strict: None,
        cache_control: marker,
    }];
    req.sampling.seed = Some(7);
    req.sampling.frequency_penalty = Some(0.0);
    req.native = Some(NativeFields {
        protocol: Some(Protocol::Chat),
        fields: serde_json::from_value(json!({"logit_bias": {"1": 2}, "metadata": {"a": "b"}}))
            .unwrap(),
        betas: Vec::new(),
    });
    let wire = encoded(&req);
    assert_eq!(
        wire,
        json!({
            "model": "up",
            "instructions": "sys",
            "input": [
                {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "look"},
                    {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]},
                // Foreign thinking and redacted thinking are left out.
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "calling"}]},
                {"type": "function_call", "call_id": "toolu_1", "name": "f", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "toolu_1", "output": "42"},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "thanks"}]}
            ],
            "store": false,
            // A converted tool stays non-strict (Responses defaults to strict).
            "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": false}]
        })
    );
}

#[test]
fn what_responses_cannot_say_is_refused() {
    let base = chat_like(vec![Message::text(Role::User, "hi")]);
    let mut cases: Vec<(&str, Request)> = Vec::new();
    let mut r = base.clone();
    r.sampling.stop = vec!["END".into()];
    cases.push(("stop", r));
    let mut r = base.clone();
    r.sampling.presence_penalty = Some(0.5);
    cases.push(("presence_penalty", r));
    let mut r = base.clone();
    r.reasoning.thinking = Some(ThinkingConfig {
        mode: ThinkingMode::Enabled,
        budget_tokens: Some(2048),
        display: None,
    });
    cases.push(("thinking", r));
    let mut r = base.clone();
    r.messages[0].content = vec![ContentPart::Image {
        source: ImageSource::Upload {
            file_id: "upload_1".into(),
            param: String::new(),
        },
        detail: None,
        cache_control: None,
    }];
    cases.push(("upload", r));
    let mut r = base.clone();
    r.messages[0].content = vec![ContentPart::Opaque {
        protocol: Protocol::Chat,
        value: json!({"type": "x_chat_part"}),
    }];
    cases.push(("chat opaque part", r));
    let mut r = base.clone();
    r.messages.push(Message::text(Role::Tool, "no result"));
    cases.push(("tool message without result", r));
    let mut r = base.clone();
    r.response_format = Some(router_canonical::ResponseFormat::JsonSchema {
        name: "x".into(),
        schema: Value::Null,
        strict: None,
        description: None,
    });
    cases.push(("json_schema without schema", r));
    for (name, req) in cases {
        let err = encode_request(&req, "up").unwrap_err();
        assert_eq!(err.code, ErrorCode::UnsupportedConversion, "{name}");
    }
    // Disabled thinking asks for nothing a Responses model does not do.
    let mut r = base;
    r.reasoning.thinking = Some(ThinkingConfig {
        mode: ThinkingMode::Disabled,
        budget_tokens: None,
        display: None,
    });
    assert!(encode_request(&r, "up").is_ok());
}

#[test]
fn effort_is_never_synthesized_and_the_alias_is_normalized() {
    // C-08: no effort, no reasoning object.
    let req = parse_request(br#"{"model": "m", "input": "hi", "reasoning": null}"#).unwrap();
    assert!(encoded(&req).get("reasoning").is_none());
    // C-09: the alias is forwarded as reasoning.effort, never as reasoning_effort.
    let req = parse_request(
        br#"{"model": "m", "input": "hi", "reasoning_effort": "low", "reasoning": {"effort": "low"}}"#,
    )
    .unwrap();
    let wire = encoded(&req);
    assert_eq!(wire["reasoning"], json!({"effort": "low"}));
    assert!(wire.get("reasoning_effort").is_none());
    // C-06: null max_output_tokens is omitted; 16 is forwarded.
    let req =
        parse_request(br#"{"model": "m", "input": "hi", "max_output_tokens": null}"#).unwrap();
    assert!(encoded(&req).get("max_output_tokens").is_none());
    let req = parse_request(br#"{"model": "m", "input": "hi", "max_output_tokens": 16}"#).unwrap();
    assert_eq!(encoded(&req)["max_output_tokens"], 16);
    // service_tier, background and unknown fields never reach a supplier.
    let req = parse_request(
        br#"{"model": "m", "input": "hi", "service_tier": "priority", "background": false, "x": 1, "zdr": false}"#,
    )
    .unwrap();
    let wire = encoded(&req);
    for key in ["service_tier", "background", "x", "zdr"] {
        assert!(wire.get(key).is_none(), "{key}");
    }
}

#[test]
fn a_refusal_in_history_travels_natively() {
    let req = parse_request(
        br#"{"model": "m", "input": [{"role": "user", "content": "q"},
            {"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't."}]},
            {"role": "user", "content": "ok"}]}"#,
    )
    .unwrap();
    assert_eq!(req.native_only.as_deref(), Some("input[1].content[0]"));
    assert_eq!(
        encoded(&req)["input"][1],
        json!({"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "I can't."}]})
    );
}

// ---------------------------------------------------------------------------
// encode_response

fn response(output: Vec<OutputBlock>, stop_reason: StopReason) -> Response {
    Response {
        id: "sup".into(),
        model: "sup-model".into(),
        output,
        stop_reason,
        stop_sequence: None,
        usage: Usage {
            input_tokens: 10,
            output_tokens: 6,
            cache_read_input_tokens: 2,
            cache_creation_input_tokens: 0,
            reasoning_tokens: 1,
        },
        created: 1,
    }
}

const CTX: ReplyContext<'static> =
    ReplyContext::new("resp_abc", "acme/m", 1_700_000_000).with_cost(Some(NanoUsd(2_500_000)));

/// The members the OpenAI SDKs' `Response` model requires.
fn assert_sdk_shape(value: &Value) {
    for key in [
        "id",
        "object",
        "created_at",
        "model",
        "output",
        "parallel_tool_calls",
        "tool_choice",
        "tools",
        "error",
        "incomplete_details",
        "instructions",
        "metadata",
        "status",
    ] {
        assert!(value.get(key).is_some(), "missing {key}: {value}");
    }
    assert_eq!(value["object"], "response");
    for item in value["output"].as_array().unwrap() {
        match item["type"].as_str().unwrap() {
            "message" => {
                for key in ["id", "role", "status", "content"] {
                    assert!(item.get(key).is_some(), "message without {key}");
                }
                for part in item["content"].as_array().unwrap() {
                    if part["type"] == "output_text" {
                        assert_eq!(part["annotations"], json!([]));
                    }
                }
            }
            "function_call" => {
                for key in ["id", "call_id", "name", "arguments", "status"] {
                    assert!(item.get(key).is_some(), "function_call without {key}");
                }
            }
            "reasoning" => {
                assert!(item["id"].is_string() && item["summary"].is_array());
            }
            other => panic!("unexpected item {other}"),
        }
    }
}

#[test]
fn the_client_reply_has_every_required_member() {
    let resp = response(
        vec![
            OutputBlock::Thinking {
                text: "why".into(),
                signature: Some("sig".into()),
            },
            OutputBlock::RedactedThinking { data: "x".into() },
            OutputBlock::Text { text: "a".into() },
            OutputBlock::Refusal { text: "no".into() },
            OutputBlock::ToolCall {
                id: "call_1".into(),
                name: "f".into(),
                arguments: "{}".into(),
            },
            OutputBlock::Text { text: "b".into() },
        ],
        StopReason::ToolUse,
    );
    let value: Value = serde_json::from_slice(&encode_response(&resp, &CTX)).unwrap();
    assert_sdk_shape(&value);
    assert_eq!(value["id"], "resp_abc");
    assert_eq!(value["model"], "acme/m");
    assert_eq!(value["created_at"], 1_700_000_000);
    assert_eq!(value["status"], "completed");
    assert_eq!(value["store"], false);
    let output = value["output"].as_array().unwrap();
    let kinds: Vec<_> = output.iter().map(|i| i["type"].as_str().unwrap()).collect();
    // Redacted thinking has no Responses form; text and refusal share a message.
    assert_eq!(kinds, ["reasoning", "message", "function_call", "message"]);
    assert_eq!(output[0]["encrypted_content"], "sig");
    assert_eq!(
        output[1]["content"][1],
        json!({"type": "refusal", "refusal": "no"})
    );
    assert_eq!(output[2]["call_id"], "call_1");
    assert_eq!(output[2]["id"], "fc_abc_2");
    assert_eq!(
        value["usage"],
        json!({"input_tokens": 10, "input_tokens_details": {"cached_tokens": 2, "cache_write_tokens": 0},
               "output_tokens": 6, "output_tokens_details": {"reasoning_tokens": 1},
               "total_tokens": 16, "cost": 0.0025})
    );
}

#[test]
fn a_length_stop_is_an_incomplete_response() {
    let resp = response(
        vec![OutputBlock::Text { text: "cut".into() }],
        StopReason::MaxTokens,
    );
    let value: Value = serde_json::from_slice(&encode_response(&resp, &CTX)).unwrap();
    assert_eq!(value["status"], "incomplete");
    assert_eq!(
        value["incomplete_details"],
        json!({"reason": "max_output_tokens"})
    );
    assert_eq!(value["output"][0]["status"], "incomplete");
    let resp = response(vec![], StopReason::ContentFilter);
    let value: Value = serde_json::from_slice(&encode_response(&resp, &CTX)).unwrap();
    assert_eq!(
        value["incomplete_details"],
        json!({"reason": "content_filter"})
    );
}

// ---------------------------------------------------------------------------
// StreamEncoder

fn stream_ctx() -> StreamContext {
    StreamContext::new("resp_abc", "acme/m", 1_700_000_000)
}

fn client_frames(bytes: &[u8]) -> Vec<(String, Value)> {
    let mut decoder = Decoder::default();
    let mut frames = Vec::new();
    decoder.feed(bytes, &mut frames).unwrap();
    assert!(!decoder.has_partial());
    frames
        .into_iter()
        .enumerate()
        .map(|(n, f)| {
            let data: Value = serde_json::from_str(&f.data).unwrap();
            let event = f.event.unwrap();
            assert_eq!(data["type"], event.as_str(), "event name equals type");
            assert_eq!(data["sequence_number"], n, "sequence numbers count up");
            (event, data)
        })
        .collect()
}

fn block(index: usize, kind: BlockKind, deltas: &[BlockDelta]) -> Vec<StreamEvent> {
    let mut events = vec![StreamEvent::BlockStart { index, block: kind }];
    events.extend(deltas.iter().map(|d| StreamEvent::Delta {
        index,
        delta: d.clone(),
    }));
    events.push(StreamEvent::BlockStop { index });
    events
}

#[test]
fn streamed_blocks_become_items_and_the_finish_carries_cost() {
    let mut events = vec![StreamEvent::Start {
        id: "sup".into(),
        model: "sup-model".into(),
    }];
    events.extend(block(0, BlockKind::Text, &[BlockDelta::Text("a".into())]));
    events.extend(block(
        1,
        BlockKind::Refusal,
        &[BlockDelta::Refusal("no".into())],
    ));
    events.extend(block(
        2,
        BlockKind::RedactedThinking { data: "x".into() },
        &[],
    ));
    events.extend(block(
        3,
        BlockKind::ToolCall {
            id: "call_1".into(),
            name: "f".into(),
        },
        &[
            BlockDelta::ToolArguments("{\"a\":".into()),
            BlockDelta::ToolArguments("1}".into()),
        ],
    ));
    events.push(StreamEvent::Usage {
        usage: Usage::default(),
    });
    let mut encoder = ResponsesClient.stream_encoder(stream_ctx(), Default::default());
    let mut out = Vec::new();
    for e in &events {
        encoder.event(e, &mut out);
    }
    let usage = Usage {
        input_tokens: 5,
        output_tokens: 3,
        ..Usage::default()
    };
    finish(
        &mut encoder,
        &StopReason::ToolUse,
        &usage,
        NanoUsd(7),
        &mut out,
    );
    // Nothing is written after the end.
    encoder.event(
        &StreamEvent::BlockStart {
            index: 9,
            block: BlockKind::Text,
        },
        &mut out,
    );
    let frames = client_frames(&out);
    let names: Vec<_> = frames.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.content_part.added",
            "response.refusal.delta",
            "response.refusal.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let (_, refusal_added) = &frames[7];
    assert_eq!(refusal_added["content_index"], 1);
    assert_eq!(refusal_added["output_index"], 0);
    let (_, args_done) = &frames[15];
    assert_eq!(args_done["arguments"], "{\"a\":1}");
    assert_eq!(args_done["output_index"], 1);
    let (_, done) = frames.last().unwrap();
    assert_sdk_shape(&done["response"]);
    assert_eq!(done["response"]["status"], "completed");
    assert_eq!(done["response"]["usage"]["cost"], 0.000000007);
    assert_eq!(done["response"]["output"].as_array().unwrap().len(), 2);
}

#[test]
fn a_streamed_length_stop_ends_with_response_incomplete() {
    let mut encoder = ResponsesClient.stream_encoder(stream_ctx(), Default::default());
    let mut out = Vec::new();
    for e in block(0, BlockKind::Text, &[BlockDelta::Text("cut".into())]) {
        encoder.event(&e, &mut out);
    }
    finish(
        &mut encoder,
        &StopReason::MaxTokens,
        &Usage::default(),
        NanoUsd(0),
        &mut out,
    );
    let frames = client_frames(&out);
    let (name, last) = frames.last().unwrap();
    assert_eq!(name, "response.incomplete");
    assert_eq!(
        last["response"]["incomplete_details"]["reason"],
        "max_output_tokens"
    );
    assert_eq!(last["response"]["output"][0]["status"], "incomplete");
}

#[test]
fn thinking_streams_as_a_reasoning_summary() {
    let mut encoder = ResponsesClient.stream_encoder(stream_ctx(), Default::default());
    let mut out = Vec::new();
    for e in block(
        0,
        BlockKind::Thinking,
        &[
            BlockDelta::Thinking("hm".into()),
            BlockDelta::Thinking("m".into()),
            BlockDelta::Signature("sig".into()),
        ],
    ) {
        encoder.event(&e, &mut out);
    }
    finish(
        &mut encoder,
        &StopReason::EndTurn,
        &Usage::default(),
        NanoUsd(0),
        &mut out,
    );
    let frames = client_frames(&out);
    let names: Vec<_> = frames.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names[2..],
        [
            "response.output_item.added",
            "response.reasoning_summary_part.added",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.done",
            "response.reasoning_summary_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    assert_eq!(
        frames[8].1["item"],
        json!({"type": "reasoning", "id": "rs_abc_0",
               "summary": [{"type": "summary_text", "text": "hmm"}], "encrypted_content": "sig"})
    );
}

#[test]
fn a_failure_mid_stream_ends_with_error_and_response_failed() {
    let mut encoder = ResponsesClient.stream_encoder(stream_ctx(), Default::default());
    let mut out = Vec::new();
    encoder.event(
        &StreamEvent::Start {
            id: "s".into(),
            model: "m".into(),
        },
        &mut out,
    );
    encoder.event(
        &StreamEvent::BlockStart {
            index: 0,
            block: BlockKind::Text,
        },
        &mut out,
    );
    encoder.event(
        &StreamEvent::Delta {
            index: 0,
            delta: BlockDelta::Text("partial".into()),
        },
        &mut out,
    );
    let error = ApiError::new(
        ErrorCode::InvalidUpstreamResponse,
        "the upstream supplier returned an invalid response",
    );
    encoder.error(&error, &mut out);
    finish(
        &mut encoder,
        &StopReason::EndTurn,
        &Usage::default(),
        NanoUsd(0),
        &mut out,
    );
    let frames = client_frames(&out);
    let n = frames.len();
    let (name, err) = &frames[n - 2];
    assert_eq!(name, "error");
    assert_eq!(err["code"], "invalid_upstream_response");
    assert_eq!(err["param"], Value::Null);
    let (name, failed) = &frames[n - 1];
    assert_eq!(name, "response.failed");
    assert_eq!(failed["response"]["status"], "failed");
    assert_eq!(failed["response"]["error"]["code"], "server_error");
    assert_eq!(failed["response"]["usage"], Value::Null);
    assert_sdk_shape(&failed["response"]);

    // A rate limit keeps its meaning in the closed list of codes.
    const SPEND_LIMIT: ErrorCode =
        ErrorCode::Product(&ProductCode::new("api_key_spend_limit_exceeded", 429));
    let mut encoder = ResponsesClient.stream_encoder(stream_ctx(), Default::default());
    let mut out = Vec::new();
    encoder.error(&ApiError::new(SPEND_LIMIT, "limit"), &mut out);
    let frames = client_frames(&out);
    let names: Vec<_> = frames.iter().map(|(n, _)| n.as_str()).collect();
    // SDK stream helpers need response.created before anything else.
    assert_eq!(
        names,
        [
            "response.created",
            "response.in_progress",
            "error",
            "response.failed"
        ]
    );
    assert_eq!(
        frames[3].1["response"]["error"]["code"],
        "rate_limit_exceeded"
    );
}

#[test]
fn error_body_is_the_openai_envelope() {
    let body = error_body(&ApiError::invalid("store", "`store` must be false"));
    let value: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        value,
        json!({"error": {"message": "`store` must be false", "type": "invalid_request_error",
                         "param": "store", "code": "invalid_parameter"}})
    );
}
