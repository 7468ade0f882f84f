//! The codecs as a library user meets them: through the traits, with each
//! policy option at its default and at the gateway's setting, and each kind
//! of `SupplierError` a Chat supplier's answer can yield.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a panic is the failure report"
)]

use router_canonical::{Message, OutputBlock, Role};
use router_chat::{
    ChatClient, ChatExtra, ChatSupplier, ClientCodec, ClientStreamEncoder, DecodeError, Frame,
    Protocol, ReplyContext, Request, Response, StopReason, StreamContext, StreamEvent,
    SupplierCodec, SupplierError, SupplierFailure, SupplierStreamDecoder, SupplierTarget, Usage,
    finish_of,
};
use router_wire_testkit::frames::{data as frame, data_lines, done};
use serde_json::{Value, json};

fn text_delta(text: &str) -> Frame {
    frame(json!({"id": "s", "model": "m", "choices": [{"index": 0, "delta": {"content": text}}]}))
}

fn reply(message: Value, usage: Option<Value>) -> Vec<u8> {
    let mut body = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]
    });
    if let Some(usage) = usage {
        body["usage"] = usage;
    }
    serde_json::to_vec(&body).unwrap()
}

fn decode_stream(
    codec: &dyn SupplierCodec,
    frames: &[Frame],
) -> Result<Vec<StreamEvent>, SupplierError> {
    let mut decoder = codec.stream_decoder();
    let mut events = Vec::new();
    for frame in frames {
        events.extend(decoder.decode(frame)?);
    }
    Ok(events)
}

/// The typed error a non-reported `SupplierError` keeps as its source.
fn source(error: &SupplierError) -> &DecodeError {
    let (SupplierError::InvalidReply(source) | SupplierError::Unsupported(source)) = error else {
        panic!("no decoder error in {error:?}");
    };
    source.downcast_ref::<DecodeError>().unwrap()
}

// ---------------------------------------------------------------------------
// The supplier codec

#[test]
fn the_supplier_codec_works_through_trait_objects() {
    let codec: &dyn SupplierCodec = &ChatSupplier::new().with_require_usage(true);
    assert_eq!(codec.protocol(), Protocol::Chat);
    assert_eq!(codec.path(), "/chat/completions");

    let request = Request {
        model: "public".into(),
        messages: vec![Message::text(Role::User, "hi")],
        stream: true,
        ..Request::default()
    };
    let target = SupplierTarget::new("up").with_default_max_output_tokens(Some(99));
    let body: Value =
        serde_json::from_slice(&codec.encode_request(&request, &target).unwrap()).unwrap();
    assert_eq!(body["model"], "up");
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert!(
        body.get("max_completion_tokens").is_none(),
        "Chat needs no default output cap"
    );

    assert_eq!(
        codec.headers(&request, Some("sk-1")),
        vec![("authorization", "Bearer sk-1".to_owned())]
    );
    assert!(codec.headers(&request, None).is_empty());

    let response = codec
        .decode_response(&reply(
            json!({"content": "hello"}),
            Some(json!({"prompt_tokens": 3, "completion_tokens": 1})),
        ))
        .unwrap();
    assert_eq!(response.text(), "hello");
    assert_eq!(response.usage.input_tokens, 3);

    let mut decoder: Box<dyn SupplierStreamDecoder> = codec.stream_decoder();
    let mut events = Vec::new();
    for f in [
        text_delta("hel"),
        text_delta("lo"),
        frame(
            json!({"id": "s", "model": "m", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}),
        ),
        done(),
    ] {
        events.extend(decoder.decode(&f).unwrap());
    }
    assert!(decoder.is_finished());
    let Some(StreamEvent::Finish { usage, .. }) = events.last() else {
        panic!("no Finish: {events:?}");
    };
    assert_eq!(usage.output_tokens, 1);

    let error = codec.decode_error(
        429,
        &(),
        br#"{"error": {"message": "slow down", "type": "rate_limit_error", "code": "rate_limited"}}"#,
    );
    assert_eq!(
        error,
        SupplierError::Reported(
            SupplierFailure::with_status(429)
                .kind("rate_limit_error")
                .code("rate_limited")
                .message("slow down")
        )
    );
}

#[test]
fn an_unreadable_error_reply_is_still_reported() {
    let error = ChatSupplier::default().decode_error(502, &(), b"<html>Bad gateway</html>");
    assert_eq!(
        error,
        SupplierError::Reported(SupplierFailure::with_status(502))
    );
}

#[test]
fn usage_is_optional_unless_required() {
    let body = reply(json!({"content": "hi"}), None);
    let frames = [text_delta("hi"), done()];

    let lenient = ChatSupplier::default();
    assert_eq!(
        lenient.decode_response(&body).unwrap().usage,
        Usage::default()
    );
    let events = decode_stream(&lenient, &frames).unwrap();
    assert!(matches!(
        events.last(),
        Some(StreamEvent::Finish { usage, .. }) if *usage == Usage::default()
    ));

    let strict = ChatSupplier::new().with_require_usage(true);
    let error = strict.decode_response(&body).unwrap_err();
    assert!(matches!(error, SupplierError::InvalidReply(_)), "{error:?}");
    assert_eq!(source(&error), &DecodeError::MissingUsage);
    let error = decode_stream(&strict, &frames).unwrap_err();
    assert_eq!(source(&error), &DecodeError::MissingUsage);
}

// ---------------------------------------------------------------------------
// Each kind of SupplierError

#[test]
fn an_in_stream_error_is_a_reported_failure_without_status() {
    let error = decode_stream(
        &ChatSupplier::default(),
        &[
            text_delta("a"),
            frame(json!({"error": {"message": "overloaded", "type": "server_error"}})),
        ],
    )
    .unwrap_err();
    assert_eq!(
        error,
        SupplierError::Reported(
            SupplierFailure::default()
                .kind("server_error")
                .message("overloaded")
        )
    );
}

#[test]
fn an_unknown_content_part_is_unsupported() {
    let error = ChatSupplier::default()
        .decode_response(&reply(
            json!({"content": [{"type": "output_audio", "data": ""}]}),
            None,
        ))
        .unwrap_err();
    assert!(matches!(error, SupplierError::Unsupported(_)), "{error:?}");
    assert!(matches!(
        source(&error),
        DecodeError::UnknownContent { kind, .. } if kind == "output_audio"
    ));
}

#[test]
fn an_unknown_tool_call_type_is_unsupported() {
    let error = decode_stream(
        &ChatSupplier::default(),
        &[frame(
            json!({"id": "s", "model": "m", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c", "type": "custom"}]}}]}),
        )],
    )
    .unwrap_err();
    assert!(matches!(error, SupplierError::Unsupported(_)), "{error:?}");
    assert!(matches!(
        source(&error),
        DecodeError::UnknownToolCallType { kind } if kind == "custom"
    ));
}

#[test]
fn a_malformed_reply_is_invalid() {
    let codec = ChatSupplier::default();
    let error = codec.decode_response(b"<html>").unwrap_err();
    assert!(matches!(error, SupplierError::InvalidReply(_)), "{error:?}");
    assert!(matches!(source(&error), DecodeError::InvalidJson(_)));

    let error = codec
        .decode_response(br#"{"id": "x", "choices": []}"#)
        .unwrap_err();
    assert_eq!(source(&error), &DecodeError::MissingChoice);

    let error = decode_stream(&codec, &[done(), text_delta("late")]).unwrap_err();
    assert!(matches!(error, SupplierError::InvalidReply(_)), "{error:?}");
    assert_eq!(source(&error), &DecodeError::AfterDone);
}

// ---------------------------------------------------------------------------
// The client codec

fn stream_context() -> StreamContext {
    StreamContext::new("chatcmpl-x", "public", 7)
}

fn finish_event() -> StreamEvent {
    StreamEvent::Finish {
        stop_reason: StopReason::EndTurn,
        stop_sequence: None,
        usage: Usage {
            input_tokens: 2,
            output_tokens: 3,
            ..Usage::default()
        },
    }
}

#[test]
fn the_request_says_whether_it_wants_usage() {
    let client = ChatClient::default();
    let (_, extra) = client
        .parse_request(
            &(),
            br#"{"model": "m", "messages": [{"role": "user", "content": "hi"}],
                 "stream": true, "stream_options": {"include_usage": true}}"#,
        )
        .unwrap();
    assert_eq!(
        extra,
        ChatExtra {
            include_usage: true
        }
    );
    let (_, extra) = client
        .parse_request(
            &(),
            br#"{"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": true}"#,
        )
        .unwrap();
    assert_eq!(extra, ChatExtra::default());
}

#[test]
fn a_finish_event_writes_the_ending_finish_writes_without_cost() {
    let client = ChatClient::default();
    let event = finish_event();
    let mut by_event = Vec::new();
    client
        .stream_encoder(stream_context(), ChatExtra::default())
        .event(&event, &mut by_event);
    let mut by_finish = Vec::new();
    client
        .stream_encoder(stream_context(), ChatExtra::default())
        .finish(&finish_of(&event).unwrap(), &mut by_finish);
    assert_eq!(by_event, by_finish);
    let lines = data_lines(&by_event);
    assert_eq!(lines.len(), 2, "no usage chunk unless asked: {lines:?}");
    let chunk: Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(chunk["choices"][0]["finish_reason"], "stop");
    assert_eq!(lines[1], "[DONE]");
}

#[test]
fn the_usage_chunk_is_written_when_asked_for_or_always() {
    let event = finish_event();
    for (client, extra) in [
        (
            ChatClient::default(),
            ChatExtra {
                include_usage: true,
            },
        ),
        (
            ChatClient::new().with_always_include_usage(true),
            ChatExtra::default(),
        ),
    ] {
        let mut out = Vec::new();
        client
            .stream_encoder(stream_context(), extra)
            .event(&event, &mut out);
        let lines = data_lines(&out);
        assert_eq!(lines.len(), 3, "{lines:?}");
        let usage: Value = serde_json::from_str(&lines[1]).unwrap();
        assert_eq!(usage["choices"], json!([]));
        assert_eq!(usage["usage"]["total_tokens"], 5);
        assert!(usage["usage"].get("cost").is_none(), "no cost without one");
        assert_eq!(lines[2], "[DONE]");
    }
}

#[test]
fn a_reply_without_a_cost_has_no_usage_cost() {
    let response = Response {
        id: "up".into(),
        model: "up-model".into(),
        output: vec![OutputBlock::Text { text: "hi".into() }],
        stop_reason: StopReason::EndTurn,
        stop_sequence: None,
        usage: Usage::default(),
        created: 0,
    };
    let reply = ReplyContext::new("chatcmpl-r", "public", 5);
    let body: Value = serde_json::from_slice(&ChatClient::default().encode_response(
        &response,
        &reply,
        &ChatExtra::default(),
    ))
    .unwrap();
    assert_eq!(body["created"], 5);
    assert_eq!(body["choices"][0]["message"]["content"], "hi");
    assert!(body["usage"].get("cost").is_none(), "{body}");
}
