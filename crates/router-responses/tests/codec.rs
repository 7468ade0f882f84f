//! The two codecs through the `router-canonical` traits: the supplier codec
//! driven only as `&dyn SupplierCodec`, how a `DecodeError` is classified
//! into a `SupplierError`, the `require_usage` option, and the client
//! encoder's one meaning of `StreamEvent::Finish` and of an absent cost.

#![expect(
    clippy::unwrap_used,
    reason = "helpers outside #[test] functions: a panic is the failure report"
)]

use router_canonical::sse::Decoder;
use router_canonical::{BlockDelta, BlockKind, Message, Role};
use router_responses::{
    ApiError, ClientCodec, ClientStreamEncoder, DecodeError, Frame, InvalidJson, NanoUsd, Protocol,
    ReplyContext, Request, ResponsesClient, ResponsesSupplier, StopReason, StreamContext,
    StreamEnd, StreamEvent, SupplierCodec, SupplierError, SupplierFailure, SupplierStreamDecoder,
    SupplierTarget, Usage,
};
use router_wire_testkit::frames::typed as frame;
use serde_json::{Value, json};

fn reply(usage: Option<Value>) -> Vec<u8> {
    let mut body = json!({
        "id": "resp_1", "object": "response", "created_at": 1, "status": "completed",
        "model": "m",
        "output": [{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                    "content": [{"type": "output_text", "text": "Hi", "annotations": []}]}]
    });
    if let Some(usage) = usage {
        body["usage"] = usage;
    }
    serde_json::to_vec(&body).unwrap()
}

fn stream(completed: Value) -> Vec<Frame> {
    vec![
        frame(json!({"type": "response.created", "sequence_number": 0,
                     "response": {"id": "resp_s", "model": "m", "status": "in_progress", "output": []}})),
        frame(
            json!({"type": "response.output_text.delta", "item_id": "msg", "output_index": 0,
                     "content_index": 0, "delta": "Hi"}),
        ),
        frame(completed),
    ]
}

fn decode_stream(
    decoder: &mut dyn SupplierStreamDecoder,
    frames: &[Frame],
) -> Result<Vec<StreamEvent>, SupplierError> {
    let mut events = Vec::new();
    for frame in frames {
        events.extend(decoder.decode(frame)?);
    }
    Ok(events)
}

// ---------------------------------------------------------------------------
// The supplier codec as a gateway holds it

#[test]
fn the_supplier_codec_works_through_the_trait_object() {
    let supplier = ResponsesSupplier::new().with_require_usage(true);
    let codec: &dyn SupplierCodec = &supplier;
    assert_eq!(codec.protocol(), Protocol::Responses);
    assert_eq!(codec.path(), "/responses");

    // Encode a request.
    let request = Request {
        model: "acme/m".into(),
        messages: vec![Message::text(Role::User, "Hi")],
        ..Request::default()
    };
    let target = SupplierTarget::new("m-2025").with_default_max_output_tokens(Some(99));
    let body: Value =
        serde_json::from_slice(&codec.encode_request(&request, &target).unwrap()).unwrap();
    assert_eq!(body["model"], "m-2025");
    assert_eq!(body["store"], false);
    // Responses needs no output cap: the default is not sent.
    assert!(body.get("max_output_tokens").is_none());
    assert_eq!(
        codec.headers(&request, Some("sk-1")),
        [("authorization", "Bearer sk-1".to_owned())]
    );
    assert!(codec.headers(&request, None).is_empty());

    // Decode a reply.
    let response = codec
        .decode_response(&reply(Some(
            json!({"input_tokens": 3, "output_tokens": 1, "total_tokens": 4}),
        )))
        .unwrap();
    assert_eq!(response.text(), "Hi");
    assert_eq!(response.usage.input_tokens, 3);
    assert!(matches!(
        codec.decode_response(b"<html>"),
        Err(SupplierError::InvalidReply(_))
    ));

    // Decode a stream.
    let mut decoder: Box<dyn SupplierStreamDecoder> = codec.stream_decoder();
    let events = decode_stream(
        decoder.as_mut(),
        &stream(json!({"type": "response.completed", "response": {
            "id": "resp_s", "model": "m", "status": "completed", "output": [],
            "usage": {"input_tokens": 3, "output_tokens": 1}}})),
    )
    .unwrap();
    assert!(decoder.is_finished());
    assert!(
        matches!(events.last(), Some(StreamEvent::Finish { usage, .. }) if usage.input_tokens == 3)
    );
    let mut decoder = codec.stream_decoder();
    let err = decode_stream(
        decoder.as_mut(),
        &[frame(
            json!({"type": "error", "code": "rate_limit_exceeded", "message": "slow"}),
        )],
    )
    .unwrap_err();
    assert_eq!(
        err.reported(),
        Some(
            &SupplierFailure::default()
                .code("rate_limit_exceeded")
                .message("slow")
        )
    );

    // Decode an error reply: the OpenAI shape, and a body that is not.
    let err = codec.decode_error(
        429,
        &(),
        br#"{"error": {"message": "slow down", "type": "rate_limit_error", "code": "rate_limit_exceeded"}}"#,
    );
    assert_eq!(
        err,
        SupplierError::Reported(
            SupplierFailure::with_status(429)
                .kind("rate_limit_error")
                .code("rate_limit_exceeded")
                .message("slow down")
        )
    );
    assert_eq!(
        codec.decode_error(502, &(), b"<html>bad gateway</html>"),
        SupplierError::Reported(SupplierFailure::with_status(502))
    );
}

// ---------------------------------------------------------------------------
// DecodeError -> SupplierError, one test per kind

#[test]
fn the_suppliers_own_failure_is_reported_without_a_status() {
    let err = DecodeError::SupplierError {
        kind: Some("server_error".into()),
        code: Some("500".into()),
        message: Some("boom".into()),
    };
    assert_eq!(
        SupplierError::from(err),
        SupplierError::Reported(
            SupplierFailure::default()
                .kind("server_error")
                .code("500")
                .message("boom")
        )
    );
}

#[test]
fn an_unknown_item_or_part_is_unsupported_and_keeps_its_typed_error() {
    for err in [
        DecodeError::UnknownOutputItem {
            path: "output[0]".into(),
            kind: "web_search_call".into(),
        },
        DecodeError::UnknownContent {
            path: "output[0].content[0]".into(),
            kind: "output_audio".into(),
        },
    ] {
        match SupplierError::from(err.clone()) {
            SupplierError::Unsupported(source) => {
                assert_eq!(source.downcast_ref::<DecodeError>(), Some(&err));
            }
            other => panic!("{err}: {other:?}"),
        }
    }
}

#[test]
fn everything_else_is_an_invalid_reply_and_keeps_its_typed_error() {
    for err in [
        DecodeError::InvalidJson(InvalidJson {
            path: "output".into(),
            message: "invalid type".into(),
        }),
        DecodeError::MissingUsage,
        DecodeError::InvalidUsage {
            usage: Usage::default(),
        },
        DecodeError::UnexpectedStatus {
            status: "queued".into(),
        },
        DecodeError::OutOfOrder {
            event: "response.output_text.delta".into(),
            output_index: None,
        },
        DecodeError::AfterFinish,
    ] {
        match SupplierError::from(err.clone()) {
            SupplierError::InvalidReply(source) => {
                assert_eq!(source.downcast_ref::<DecodeError>(), Some(&err));
            }
            other => panic!("{err}: {other:?}"),
        }
    }
}

// ---------------------------------------------------------------------------
// require_usage

#[test]
fn by_default_missing_usage_reads_as_zero() {
    let supplier = ResponsesSupplier::default();
    assert!(!supplier.require_usage);
    let response = supplier.decode_response(&reply(None)).unwrap();
    assert_eq!(response.usage, Usage::default());
    assert_eq!(response.text(), "Hi");

    // A stream whose final event has no usage, or no response at all.
    for completed in [
        json!({"type": "response.completed", "response": {
            "id": "resp_s", "model": "m", "status": "completed", "output": []}}),
        json!({"type": "response.completed"}),
    ] {
        let mut decoder = supplier.stream_decoder();
        let events = decode_stream(decoder.as_mut(), &stream(completed.clone())).unwrap();
        assert!(decoder.is_finished(), "{completed}");
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Finish {
                stop_reason: StopReason::EndTurn,
                stop_sequence: None,
                usage: Usage::default(),
            }),
            "{completed}"
        );
    }
}

#[test]
fn when_required_missing_usage_is_an_invalid_reply() {
    let supplier = ResponsesSupplier::new().with_require_usage(true);
    assert_eq!(
        supplier.decode_reply(&reply(None)),
        Err(DecodeError::MissingUsage)
    );
    assert!(matches!(
        supplier.decode_response(&reply(None)),
        Err(SupplierError::InvalidReply(_))
    ));
    for completed in [
        json!({"type": "response.completed", "response": {
            "id": "resp_s", "model": "m", "status": "completed", "output": []}}),
        json!({"type": "response.completed"}),
    ] {
        let mut decoder = supplier.decoder();
        let result = stream(completed.clone())
            .iter()
            .try_for_each(|frame| decoder.decode_frame(frame).map(drop));
        assert_eq!(result, Err(DecodeError::MissingUsage), "{completed}");
    }
}

// ---------------------------------------------------------------------------
// The client codec

fn stream_ctx() -> StreamContext {
    StreamContext::new("resp_abc", "acme/m", 1_700_000_000)
}

fn text_block() -> Vec<StreamEvent> {
    vec![
        StreamEvent::BlockStart {
            index: 0,
            block: BlockKind::Text,
        },
        StreamEvent::Delta {
            index: 0,
            delta: BlockDelta::Text("Hi".into()),
        },
        StreamEvent::BlockStop { index: 0 },
    ]
}

fn last_data(bytes: &[u8]) -> Value {
    let mut frames = Vec::new();
    Decoder::default().feed(bytes, &mut frames).unwrap();
    serde_json::from_str(&frames.last().unwrap().data).unwrap()
}

#[test]
fn a_finish_event_ends_the_stream_as_finish_does_without_a_cost() {
    let usage = Usage {
        input_tokens: 5,
        output_tokens: 2,
        ..Usage::default()
    };
    let finish = StreamEvent::Finish {
        stop_reason: StopReason::MaxTokens,
        stop_sequence: None,
        usage,
    };

    let mut by_event = ResponsesClient.stream_encoder(stream_ctx(), Default::default());
    let mut a = Vec::new();
    for event in text_block().iter().chain([&finish]) {
        by_event.event(event, &mut a);
    }

    let mut by_finish = ResponsesClient.stream_encoder(stream_ctx(), Default::default());
    let mut b = Vec::new();
    for event in &text_block() {
        by_finish.event(event, &mut b);
    }
    by_finish.finish(&StreamEnd::new(&StopReason::MaxTokens, &usage), &mut b);
    assert_eq!(a, b);

    let last = last_data(&a);
    assert_eq!(last["type"], "response.incomplete");
    assert_eq!(last["response"]["usage"]["input_tokens"], 5);
    // No cost stated, none written.
    assert!(last["response"]["usage"].get("cost").is_none(), "{last}");
    // Nothing follows the end.
    by_event.event(&finish, &mut a);
    assert_eq!(a, b);
}

#[test]
fn a_reply_without_a_cost_has_no_usage_cost() {
    let response = ResponsesSupplier::default()
        .decode_reply(&reply(Some(json!({"input_tokens": 3, "output_tokens": 1}))))
        .unwrap();
    let ctx = ReplyContext::new("resp_abc", "acme/m", 1);
    let body: Value = serde_json::from_slice(&ResponsesClient.encode_response(
        &response,
        &ctx,
        &Default::default(),
    ))
    .unwrap();
    assert_eq!(body["usage"]["total_tokens"], 4);
    assert!(body["usage"].get("cost").is_none(), "{body}");
    let ctx = ctx.with_cost(Some(NanoUsd(1_500)));
    let body: Value = serde_json::from_slice(&ResponsesClient.encode_response(
        &response,
        &ctx,
        &Default::default(),
    ))
    .unwrap();
    assert_eq!(body["usage"]["cost"], 0.0000015);
}

#[test]
fn the_client_codec_speaks_responses() {
    let codec = ResponsesClient;
    assert_eq!(codec.protocol(), Protocol::Responses);
    let err = codec
        .parse_request(
            &(),
            br#"{"model": "m", "input": [{"role": "user", "content": [{"type": "future_part"}]}]}"#,
        )
        .unwrap_err();
    assert_eq!(err.param.as_deref(), Some("input[0].content[0].type"));
    let body: Value =
        serde_json::from_slice(&codec.error_body(&ApiError::invalid("store", "no"))).unwrap();
    assert_eq!(body["error"]["param"], "store");
    assert_eq!(body["error"]["code"], "invalid_parameter");
}

#[test]
fn a_messages_client_asking_for_effort_gets_reasoning_state_it_can_send_back() {
    // Thinking a Messages client receives is sealed and sent back; a
    // stateless Responses supplier replays it only from encrypted_content.
    let mut request = Request {
        model: "m".into(),
        messages: vec![Message::text(Role::User, "Hi")],
        inbound: Some(Protocol::Messages),
        ..Request::default()
    };
    request.reasoning.effort = Some("high".into());
    let target = SupplierTarget::new("up");
    let codec: &dyn SupplierCodec = &ResponsesSupplier::default();
    let body: Value =
        serde_json::from_slice(&codec.encode_request(&request, &target).unwrap()).unwrap();
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(body["reasoning"]["effort"], "high");
    // A Chat client cannot send reasoning back: nothing is asked for.
    request.inbound = Some(Protocol::Chat);
    let body: Value =
        serde_json::from_slice(&codec.encode_request(&request, &target).unwrap()).unwrap();
    assert!(body.get("include").is_none(), "{body}");
}

/// The request members OpenAI's `response` object repeats, as one client
/// request sets them.
fn echoing_request() -> Vec<u8> {
    serde_json::to_vec(&json!({
        "model": "acme/m",
        "input": "Hi",
        "instructions": "Be terse.",
        "max_output_tokens": 321,
        "reasoning": {"effort": "high", "summary": "auto"},
        "tools": [{"type": "function", "name": "get_time", "parameters": {"type": "object"}}],
        "tool_choice": {"type": "function", "name": "get_time"},
        "parallel_tool_calls": false,
        "temperature": 0.5,
        "top_p": 0.8,
        "text": {"format": {"type": "json_object"}, "verbosity": "low"},
        "user": "u-1",
        "safety_identifier": "s-1",
        "metadata": {"ticket": "T-9"},
        "top_logprobs": 2,
        "prompt_cache_key": "conv-7"
    }))
    .unwrap()
}

fn assert_echoes_the_request(response: &Value) {
    assert_eq!(response["instructions"], "Be terse.", "{response}");
    assert_eq!(response["max_output_tokens"], 321);
    assert_eq!(
        response["reasoning"],
        json!({"effort": "high", "summary": "auto"})
    );
    assert_eq!(
        response["tools"],
        json!([{"type": "function", "name": "get_time", "parameters": {"type": "object"}}])
    );
    assert_eq!(
        response["tool_choice"],
        json!({"type": "function", "name": "get_time"})
    );
    assert_eq!(response["parallel_tool_calls"], false);
    assert_eq!(response["temperature"], 0.5);
    assert_eq!(response["top_p"], 0.8);
    assert_eq!(
        response["text"],
        json!({"format": {"type": "json_object"}, "verbosity": "low"})
    );
    assert_eq!(response["user"], "u-1");
    assert_eq!(response["safety_identifier"], "s-1");
    assert_eq!(response["metadata"], json!({"ticket": "T-9"}));
    assert_eq!(response["top_logprobs"], 2);
    assert_eq!(response["prompt_cache_key"], "conv-7");
    // What a stateless gateway always answers.
    assert_eq!(response["store"], false);
    assert_eq!(response["previous_response_id"], Value::Null);
    assert_eq!(response["truncation"], "disabled");
}

#[test]
fn a_reply_echoes_what_the_request_set() {
    let (_, extra) = ResponsesClient
        .parse_request(&(), &echoing_request())
        .unwrap();
    let response = ResponsesSupplier::default()
        .decode_reply(&reply(Some(json!({"input_tokens": 3, "output_tokens": 1}))))
        .unwrap();
    let body: Value = serde_json::from_slice(&ResponsesClient.encode_response(
        &response,
        &ReplyContext::new("resp_abc", "acme/m", 1),
        &extra,
    ))
    .unwrap();
    assert_echoes_the_request(&body);
}

#[test]
fn every_response_object_of_a_stream_echoes_what_the_request_set() {
    let (_, extra) = ResponsesClient
        .parse_request(&(), &echoing_request())
        .unwrap();
    let mut encoder = ResponsesClient.stream_encoder(stream_ctx(), extra);
    let mut out = Vec::new();
    for event in &text_block() {
        encoder.event(event, &mut out);
    }
    encoder.finish(
        &StreamEnd::new(&StopReason::EndTurn, &Usage::default()),
        &mut out,
    );
    let mut frames = Vec::new();
    Decoder::default().feed(&out, &mut frames).unwrap();
    let objects: Vec<Value> = frames
        .iter()
        .map(|f| serde_json::from_str::<Value>(&f.data).unwrap())
        .filter_map(|event| event.get("response").cloned())
        .collect();
    // created, in_progress and completed.
    assert_eq!(objects.len(), 3, "{objects:?}");
    for response in &objects {
        assert_echoes_the_request(response);
    }
}

#[test]
fn a_request_that_sets_nothing_shows_the_protocol_defaults() {
    let body = serde_json::to_vec(&json!({"model": "acme/m", "input": "Hi"})).unwrap();
    let (_, extra) = ResponsesClient.parse_request(&(), &body).unwrap();
    let response = ResponsesSupplier::default()
        .decode_reply(&reply(Some(json!({"input_tokens": 3, "output_tokens": 1}))))
        .unwrap();
    let body: Value = serde_json::from_slice(&ResponsesClient.encode_response(
        &response,
        &ReplyContext::new("resp_abc", "acme/m", 1),
        &extra,
    ))
    .unwrap();
    assert_eq!(body["instructions"], Value::Null);
    assert_eq!(body["max_output_tokens"], Value::Null);
    assert_eq!(body["reasoning"], json!({"effort": null, "summary": null}));
    assert_eq!(body["tools"], json!([]));
    assert_eq!(body["tool_choice"], "auto");
    assert_eq!(body["parallel_tool_calls"], true);
    assert_eq!(body["text"], json!({"format": {"type": "text"}}));
    for unset in ["safety_identifier", "top_logprobs", "prompt_cache_key"] {
        assert!(body.get(unset).is_none(), "{unset}: {body}");
    }
    assert_eq!(body["metadata"], json!({}));
}
