//! The codecs as a gateway holds them: the supplier codec only through
//! `&dyn SupplierCodec` and `Box<dyn SupplierStreamDecoder>`, how each
//! `DecodeError` reads as a `SupplierError`, the supplier's headers and error
//! replies, the `require_usage` option, and the client codec's one meaning
//! of a `Finish` event.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a panic is the failure report"
)]

use router_canonical::sse::Frame;
use router_canonical::{ErrorCode, Message, NanoUsd, Role};
use router_messages::{
    ApiError, ClientCodec, ClientStreamEncoder, DecodeError, HeaderSource, InvalidJson,
    MessagesClient, MessagesSupplier, Protocol, ReplyContext, Request, StopReason, StreamContext,
    StreamEnd, StreamEvent, SupplierCodec, SupplierError, SupplierFailure, SupplierStreamDecoder,
    SupplierTarget, Usage,
};
use serde_json::{Value, json};

const TARGET: SupplierTarget<'static> =
    SupplierTarget::new("claude-up").with_default_max_output_tokens(Some(512));

/// A JSON body with the supported `anthropic-version` and, optionally, betas.
struct Headers(Option<&'static str>);

impl HeaderSource for Headers {
    fn header(&self, name: &str) -> Option<&str> {
        match name {
            "content-type" => Some("application/json"),
            "anthropic-version" => Some("2023-06-01"),
            "anthropic-beta" => self.0,
            _ => None,
        }
    }
}

fn native_request(betas: Option<&'static str>) -> Request {
    let (request, ()) = MessagesClient
        .parse_request(
            &Headers(betas),
            br#"{"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}"#,
        )
        .unwrap();
    request
}

fn frames(events: &[Value]) -> Vec<Frame> {
    events
        .iter()
        .map(|data| Frame {
            event: data["type"].as_str().map(str::to_owned),
            data: data.to_string(),
        })
        .collect()
}

fn text_stream(usage: Option<Value>) -> Vec<Frame> {
    let mut message = json!({"id": "msg_s", "type": "message", "role": "assistant",
        "model": "claude-up", "content": [], "stop_reason": null, "stop_sequence": null});
    if let Some(usage) = usage {
        message["usage"] = usage;
    }
    frames(&[
        json!({"type": "message_start", "message": message}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}}),
        json!({"type": "message_stop"}),
    ])
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

/// The typed error behind an invalid or unsupported reply.
fn source(err: &SupplierError) -> Option<&DecodeError> {
    match err {
        SupplierError::InvalidReply(source) | SupplierError::Unsupported(source) => {
            source.downcast_ref::<DecodeError>()
        }
        _ => None,
    }
}

// ---------------------------------------------------------------------------
// DecodeError -> SupplierError, one kind at a time

#[test]
fn the_suppliers_own_failure_is_reported_without_a_status() {
    for err in [
        DecodeError::SupplierError {
            kind: Some("overloaded_error".into()),
            message: Some("busy".into()),
        },
        DecodeError::ErrorReply {
            kind: Some("overloaded_error".into()),
            message: Some("busy".into()),
        },
    ] {
        assert_eq!(
            SupplierError::from(err),
            SupplierError::Reported(
                SupplierFailure::default()
                    .kind("overloaded_error")
                    .message("busy")
            )
        );
    }
    // An error object where a message object was expected (a 200 reply).
    let err = MessagesSupplier::default()
        .decode_response(br#"{"type": "error", "error": {"type": "api_error", "message": "m"}}"#)
        .unwrap_err();
    let failure = err.reported().expect("reported");
    assert_eq!(failure.status, None);
    assert_eq!(failure.kind.as_deref(), Some("api_error"));
    assert_eq!(failure.message.as_deref(), Some("m"));
}

#[test]
fn an_unknown_block_or_delta_type_is_unsupported() {
    for err in [
        DecodeError::UnknownContent {
            path: "content[0]".into(),
            kind: "hologram".into(),
        },
        DecodeError::UnknownDelta {
            index: 0,
            kind: "hologram_delta".into(),
        },
    ] {
        let converted = SupplierError::from(err.clone());
        assert!(
            matches!(converted, SupplierError::Unsupported(_)),
            "{converted:?}"
        );
        assert_eq!(
            source(&converted),
            Some(&err),
            "the typed error is the source"
        );
    }
}

#[test]
fn every_other_decode_error_is_an_invalid_reply() {
    for err in [
        DecodeError::InvalidJson(InvalidJson {
            path: ".".into(),
            message: "expected value".into(),
        }),
        DecodeError::MissingUsage,
        DecodeError::InvalidUsage {
            usage: Usage::default(),
        },
        DecodeError::MismatchedDelta {
            index: 0,
            kind: "text_delta".into(),
        },
        DecodeError::OutOfOrder {
            kind: "content_block_start".into(),
        },
        DecodeError::UnknownBlock { index: 1 },
        DecodeError::DuplicateBlock { index: 1 },
        DecodeError::AfterStop,
    ] {
        let converted = SupplierError::from(err.clone());
        assert!(
            matches!(converted, SupplierError::InvalidReply(_)),
            "{converted:?}"
        );
        assert_eq!(
            source(&converted),
            Some(&err),
            "the typed error is the source"
        );
        assert_eq!(
            converted.to_string(),
            format!("invalid supplier reply: {err}")
        );
    }
}

// ---------------------------------------------------------------------------
// The supplier codec as a trait object

#[test]
fn the_supplier_codec_works_through_trait_objects() {
    let codec: &dyn SupplierCodec = &MessagesSupplier::new().with_require_usage(true);
    assert_eq!(codec.protocol(), Protocol::Messages);
    assert_eq!(codec.path(), "/messages");

    // Encode a request.
    let request = Request {
        model: "m".into(),
        messages: vec![Message::text(Role::User, "hi")],
        ..Request::default()
    };
    let body: Value =
        serde_json::from_slice(&codec.encode_request(&request, &TARGET).unwrap()).unwrap();
    assert_eq!(body["model"], "claude-up");
    assert_eq!(body["max_tokens"], 512);
    assert_eq!(
        body["messages"][0],
        json!({"role": "user", "content": "hi"})
    );

    // Decode a reply.
    let response = codec
        .decode_response(
            br#"{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-up",
                 "content": [{"type": "text", "text": "Hello"}], "stop_reason": "end_turn",
                 "stop_sequence": null, "usage": {"input_tokens": 2, "output_tokens": 1}}"#,
        )
        .unwrap();
    assert_eq!(response.text(), "Hello");
    assert_eq!(response.usage.input_tokens, 2);

    // Decode a stream.
    let mut decoder: Box<dyn SupplierStreamDecoder> = codec.stream_decoder();
    let events = decode_stream(
        decoder.as_mut(),
        &text_stream(Some(json!({"input_tokens": 4, "output_tokens": 1}))),
    )
    .unwrap();
    assert!(decoder.is_finished());
    assert!(matches!(
        events.last(),
        Some(StreamEvent::Finish { stop_reason: StopReason::EndTurn, usage, .. })
            if usage.input_tokens == 4 && usage.output_tokens == 1
    ));
    // A stream failure keeps its kind through the trait.
    let mut decoder = codec.stream_decoder();
    let err = decoder
        .decode(&frames(&[json!({"type": "content_block_stop", "index": 0})])[0])
        .unwrap_err();
    assert!(matches!(source(&err), Some(DecodeError::OutOfOrder { .. })));

    // Decode an error reply.
    let err = codec.decode_error(
        429,
        &(),
        br#"{"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}"#,
    );
    assert_eq!(
        err,
        SupplierError::Reported(
            SupplierFailure::with_status(429)
                .kind("rate_limit_error")
                .message("slow down")
        )
    );
}

#[test]
fn an_unreadable_error_reply_is_still_reported() {
    let codec = MessagesSupplier::default();
    for body in [
        &b"<html>bad gateway</html>"[..],
        b"",
        br#"{"error": "text"}"#,
        br#"{"type": "error"}"#,
    ] {
        assert_eq!(
            codec.decode_error(502, &(), body),
            SupplierError::Reported(SupplierFailure::with_status(502)),
            "{}",
            String::from_utf8_lossy(body)
        );
    }
}

#[test]
fn supplier_headers_carry_the_version_the_key_and_native_betas() {
    let codec = MessagesSupplier::default();
    let request = native_request(Some("a-2025-01-01, b-2025-02-02"));
    assert_eq!(
        codec.headers(&request, Some("sk-1")),
        vec![
            ("anthropic-version", "2023-06-01".to_owned()),
            ("x-api-key", "sk-1".to_owned()),
            ("anthropic-beta", "a-2025-01-01,b-2025-02-02".to_owned()),
        ]
    );
    // No key, no betas: the version only.
    assert_eq!(
        codec.headers(&native_request(None), None),
        vec![("anthropic-version", "2023-06-01".to_owned())]
    );
    // Betas travel only with a request that came in over Messages.
    let mut converted = request.clone();
    if let Some(native) = converted.native.as_mut() {
        native.protocol = Some(Protocol::Chat);
    }
    assert_eq!(codec.headers(&converted, Some("sk-1")).len(), 2);
}

#[test]
fn a_request_without_an_output_limit_needs_the_targets_default() {
    let codec = MessagesSupplier::default();
    let request = Request {
        model: "m".into(),
        messages: vec![Message::text(Role::User, "hi")],
        ..Request::default()
    };
    let no_default = TARGET.with_default_max_output_tokens(None);
    let err = codec.encode_request(&request, &no_default).unwrap_err();
    assert_eq!(err.code, ErrorCode::UnsupportedConversion);
    // The request's own limit needs no default.
    let body: Value = serde_json::from_slice(
        &codec
            .encode_request(&native_request(None), &no_default)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(body["max_tokens"], 64);
}

// ---------------------------------------------------------------------------
// require_usage

#[test]
fn usage_is_optional_unless_required() {
    let lenient = MessagesSupplier::default();
    let strict = MessagesSupplier::new().with_require_usage(true);
    let reply = br#"{"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
        "content": [{"type": "text", "text": "x"}], "stop_reason": "end_turn", "stop_sequence": null}"#;
    assert_eq!(
        lenient.decode_response(reply).unwrap().usage,
        Usage::default()
    );
    assert!(matches!(
        source(&strict.decode_response(reply).unwrap_err()),
        Some(DecodeError::MissingUsage)
    ));
    // A partial count is kept; what is missing reads as zero.
    let partial = br#"{"content": [], "usage": {"input_tokens": 7}}"#;
    let usage = lenient.decode_response(partial).unwrap().usage;
    assert_eq!((usage.input_tokens, usage.output_tokens), (7, 0));
    assert!(strict.decode_response(partial).is_err());

    // The same for a stream that reports no usage.
    let events = decode_stream(lenient.stream_decoder().as_mut(), &text_stream(None)).unwrap();
    assert!(matches!(
        events.last(),
        Some(StreamEvent::Finish { usage, .. }) if *usage == Usage::default()
    ));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, StreamEvent::Usage { .. }))
    );
    let err = decode_stream(strict.stream_decoder().as_mut(), &text_stream(None)).unwrap_err();
    assert!(matches!(source(&err), Some(DecodeError::MissingUsage)));
}

// ---------------------------------------------------------------------------
// The client codec

fn stream() -> StreamContext {
    StreamContext::new("msg_router", "pub/model", 1_700_000_000)
}

#[test]
fn a_finish_event_writes_the_ending_that_finish_writes_without_cost() {
    let client = MessagesClient;
    let events = [
        StreamEvent::BlockStart {
            index: 0,
            block: router_canonical::BlockKind::Text,
        },
        StreamEvent::Delta {
            index: 0,
            delta: router_canonical::BlockDelta::Text("Hi".into()),
        },
    ];
    let usage = Usage {
        input_tokens: 3,
        output_tokens: 1,
        ..Usage::default()
    };
    let finish = StreamEvent::Finish {
        stop_reason: StopReason::StopSequence,
        stop_sequence: Some("END".into()),
        usage,
    };

    let mut by_event = Vec::new();
    let mut encoder = client.stream_encoder(stream(), ());
    for event in events.iter().chain([&finish]) {
        encoder.event(event, &mut by_event);
    }

    let mut by_finish = Vec::new();
    let mut encoder = client.stream_encoder(stream(), ());
    for event in &events {
        encoder.event(event, &mut by_finish);
    }
    // A Messages stream has no place for a cost: it is not written.
    encoder.finish(
        &StreamEnd::new(&StopReason::StopSequence, &usage)
            .with_stop_sequence(Some("END"))
            .with_cost(Some(NanoUsd(1_234))),
        &mut by_finish,
    );
    assert_eq!(
        String::from_utf8(by_event).unwrap(),
        String::from_utf8(by_finish.clone()).unwrap()
    );
    let text = String::from_utf8(by_finish).unwrap();
    assert!(text.contains(r#""stop_sequence":"END""#), "{text}");
    assert!(text.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
    assert!(!text.contains("cost"), "{text}");
}

#[test]
fn the_client_reply_ignores_cost_and_creation_time() {
    let client = MessagesClient;
    assert_eq!(client.protocol(), Protocol::Messages);
    let response = MessagesSupplier::default()
        .decode_response(br#"{"content": [{"type": "text", "text": "x"}], "usage": {"input_tokens": 1, "output_tokens": 1}}"#)
        .unwrap();
    let plain = ReplyContext::new("msg_r", "pub/model", 0);
    let charged =
        ReplyContext::new("msg_r", "pub/model", 1_700_000_000).with_cost(Some(NanoUsd(5)));
    assert_eq!(
        client.encode_response(&response, &plain, &()),
        client.encode_response(&response, &charged, &())
    );
    let body: Value = serde_json::from_slice(
        &client.error_body(&ApiError::invalid("messages", "`messages` is required")),
    )
    .unwrap();
    assert_eq!(
        body,
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": "`messages` is required"}})
    );
}
