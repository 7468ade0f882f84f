//! Every 400 rule of `POST /v1/completions` with the `param` it must name,
//! and the edge values each rule must still accept.
//!
//! Requirement IDs: E-02 (model, prompt required), E-03 (one-string prompt),
//! E-04 (max_tokens), E-05 (echo), E-06 (n, best_of), E-07 and GP-55
//! (logprobs, suffix), E-12 and F-28 (common fields, unknown properties),
//! F-18..F-21, F-26 (model, stream, temperature, min_discount_percent, zdr),
//! CF-01 (temperature 0-2), B-17/B-18 and CF-22 (stop, as on Chat).

use router_canonical::{ContentPart, Protocol, Role};
use router_completions::{CompletionRequest, DEFAULT_MAX_TOKENS};
use router_wire_testkit::{Percent, RoutingOptions, rejection};
use serde_json::{Value, json};

/// The body parsed as the gateway parses it: its routing fields taken into
/// the gateway's `RoutingOptions` (`parse_request_with`).
fn parse_routed(
    body: &[u8],
) -> Result<(CompletionRequest, RoutingOptions), router_completions::ApiError> {
    let mut routing = RoutingOptions::default();
    let parsed = router_completions::parse_request_with(body, &mut routing)?;
    Ok((parsed, routing))
}

fn parse_request(body: &[u8]) -> Result<CompletionRequest, router_completions::ApiError> {
    parse_routed(body).map(|(parsed, _)| parsed)
}

fn base() -> Value {
    json!({"model": "m", "prompt": "Say hi"})
}

/// The base request with one top-level field set.
fn with(field: &str, value: Value) -> Vec<u8> {
    rejection::with(base(), field, value)
}

fn without(field: &str) -> Vec<u8> {
    rejection::without(base(), field)
}

fn accept(body: &[u8]) -> CompletionRequest {
    parse_request(body)
        .unwrap_or_else(|err| panic!("{} was rejected: {err:?}", String::from_utf8_lossy(body)))
}

#[test]
fn every_rule_rejects_with_its_param() {
    let cases: Vec<(&str, Vec<u8>, Option<&str>)> = vec![
        // body
        ("body not JSON", b"{".to_vec(), None),
        ("body empty", Vec::new(), None),
        ("body not an object", b"42".to_vec(), None),
        ("body an array", b"[]".to_vec(), None),
        (
            "trailing garbage",
            b"{\"model\":\"m\",\"prompt\":\"p\"} x".to_vec(),
            None,
        ),
        // model (E-02, F-18)
        ("model missing", without("model"), Some("model")),
        ("model null", with("model", Value::Null), Some("model")),
        ("model 5", with("model", json!(5)), Some("model")),
        // prompt (E-02, E-03)
        ("prompt missing", without("prompt"), Some("prompt")),
        ("prompt null", with("prompt", Value::Null), Some("prompt")),
        ("prompt []", with("prompt", json!([])), Some("prompt")),
        (
            "prompt two strings",
            with("prompt", json!(["a", "b"])),
            Some("prompt"),
        ),
        (
            "prompt token IDs",
            with("prompt", json!([1, 2, 3])),
            Some("prompt"),
        ),
        (
            "prompt one token ID",
            with("prompt", json!([1])),
            Some("prompt"),
        ),
        (
            "prompt token batches",
            with("prompt", json!([[1, 2]])),
            Some("prompt"),
        ),
        ("prompt [[]]", with("prompt", json!([[]])), Some("prompt")),
        ("prompt 5", with("prompt", json!(5)), Some("prompt")),
        ("prompt true", with("prompt", json!(true)), Some("prompt")),
        (
            "prompt object",
            with("prompt", json!({"text": "a"})),
            Some("prompt"),
        ),
        (
            "prompt mixed",
            with("prompt", json!(["a", 1])),
            Some("prompt"),
        ),
        (
            "prompt [null]",
            with("prompt", json!([null])),
            Some("prompt"),
        ),
        // max_tokens (E-04)
        (
            "max_tokens 0",
            with("max_tokens", json!(0)),
            Some("max_tokens"),
        ),
        (
            "max_tokens -1",
            with("max_tokens", json!(-1)),
            Some("max_tokens"),
        ),
        (
            "max_tokens 1.5",
            with("max_tokens", json!(1.5)),
            Some("max_tokens"),
        ),
        (
            "max_tokens \"10\"",
            with("max_tokens", json!("10")),
            Some("max_tokens"),
        ),
        (
            "max_tokens above u32",
            with("max_tokens", json!(4_294_967_296_u64)),
            Some("max_tokens"),
        ),
        // echo (E-05)
        ("echo \"yes\"", with("echo", json!("yes")), Some("echo")),
        ("echo 1", with("echo", json!(1)), Some("echo")),
        // the types of n and best_of (E-06; values other than 1 are the
        // gateway's refusal: `n_and_best_of_are_carried_for_the_caller_to_decide`)
        ("n \"1\"", with("n", json!("1")), Some("n")),
        (
            "best_of \"2\"",
            with("best_of", json!("2")),
            Some("best_of"),
        ),
        // logprobs and suffix (E-07, GP-55)
        ("logprobs 5", with("logprobs", json!(5)), Some("logprobs")),
        ("logprobs 0", with("logprobs", json!(0)), Some("logprobs")),
        (
            "logprobs true",
            with("logprobs", json!(true)),
            Some("logprobs"),
        ),
        ("suffix \"x\"", with("suffix", json!("x")), Some("suffix")),
        ("suffix \" \"", with("suffix", json!(" ")), Some("suffix")),
        ("suffix 5", with("suffix", json!(5)), Some("suffix")),
        // temperature (CF-01, F-20) and the other sampling fields
        (
            "temperature 2.01",
            with("temperature", json!(2.01)),
            Some("temperature"),
        ),
        (
            "temperature -0.01",
            with("temperature", json!(-0.01)),
            Some("temperature"),
        ),
        (
            "temperature \"1\"",
            with("temperature", json!("1")),
            Some("temperature"),
        ),
        ("top_p 1.01", with("top_p", json!(1.01)), Some("top_p")),
        ("top_p -0.1", with("top_p", json!(-0.1)), Some("top_p")),
        (
            "presence_penalty 2.5",
            with("presence_penalty", json!(2.5)),
            Some("presence_penalty"),
        ),
        (
            "frequency_penalty -2.5",
            with("frequency_penalty", json!(-2.5)),
            Some("frequency_penalty"),
        ),
        ("seed \"7\"", with("seed", json!("7")), Some("seed")),
        ("seed 1.5", with("seed", json!(1.5)), Some("seed")),
        // stop (B-17 as on Chat; at most four sequences)
        ("stop 1", with("stop", json!(1)), Some("stop")),
        ("stop object", with("stop", json!({"a": 1})), Some("stop")),
        ("stop [1]", with("stop", json!([1])), Some("stop[0]")),
        (
            "stop [\"a\", null]",
            with("stop", json!(["a", null])),
            Some("stop[1]"),
        ),
        (
            "stop five sequences",
            with("stop", json!(["a", "b", "c", "d", "e"])),
            Some("stop"),
        ),
        // user, stream, stream_options (F-19)
        ("user 5", with("user", json!(5)), Some("user")),
        (
            "stream \"true\"",
            with("stream", json!("true")),
            Some("stream"),
        ),
        ("stream 1", with("stream", json!(1)), Some("stream")),
        (
            "stream_options a string",
            with("stream_options", json!("usage")),
            Some("stream_options"),
        ),
        (
            "stream_options.include_usage \"yes\"",
            with("stream_options", json!({"include_usage": "yes"})),
            Some("stream_options.include_usage"),
        ),
        // common routing fields (F-21, F-26)
        (
            "min_discount_percent 100",
            with("min_discount_percent", json!(100)),
            Some("min_discount_percent"),
        ),
        (
            "min_discount_percent -0.01",
            with("min_discount_percent", json!(-0.01)),
            Some("min_discount_percent"),
        ),
        (
            "min_discount_percent \"5\"",
            with("min_discount_percent", json!("5")),
            Some("min_discount_percent"),
        ),
        ("zdr \"true\"", with("zdr", json!("true")), Some("zdr")),
    ];
    rejection::check_rejected(parse_request, &cases);
}

#[test]
fn prompt_errors_say_what_is_unsupported() {
    // E-03, E-07: the message tells the client which prompt shape is refused.
    let token = parse_request(&with("prompt", json!([1, 2, 3]))).unwrap_err();
    assert!(token.message.contains("token"), "{}", token.message);
    let many = parse_request(&with("prompt", json!(["a", "b"]))).unwrap_err();
    assert!(many.message.contains("multiple"), "{}", many.message);
    let suffix = parse_request(&with("suffix", json!("x"))).unwrap_err();
    assert!(suffix.message.contains("suffix"), "{}", suffix.message);
}

#[test]
fn edge_values_are_accepted() {
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("minimal (E-01)", serde_json::to_vec(&base()).unwrap()),
        ("prompt [\"a\"] (E-03)", with("prompt", json!(["a"]))),
        ("prompt \"\"", with("prompt", json!(""))),
        ("n 1 (E-06)", with("n", json!(1))),
        ("best_of 1 (E-06)", with("best_of", json!(1))),
        ("n null", with("n", Value::Null)),
        ("logprobs null (GP-55)", with("logprobs", Value::Null)),
        ("suffix null (GP-55)", with("suffix", Value::Null)),
        ("suffix \"\" (GP-55)", with("suffix", json!(""))),
        ("echo false", with("echo", json!(false))),
        ("echo null", with("echo", Value::Null)),
        ("max_tokens 1", with("max_tokens", json!(1))),
        ("max_tokens null", with("max_tokens", Value::Null)),
        ("temperature 2 (CF-01)", with("temperature", json!(2))),
        ("temperature 0", with("temperature", json!(0))),
        ("top_p 1", with("top_p", json!(1))),
        ("stop null (CF-22)", with("stop", Value::Null)),
        ("stop [] (B-18)", with("stop", json!([]))),
        ("stop \"END\"", with("stop", json!("END"))),
        ("stop four", with("stop", json!(["a", "b", "c", "d"]))),
        ("stream true", with("stream", json!(true))),
        ("stream_options null", with("stream_options", Value::Null)),
        (
            "stream_options.include_usage",
            with("stream_options", json!({"include_usage": false})),
        ),
        ("x_custom 1 (E-12)", with("x_custom", json!(1))),
        (
            "logit_bias (dropped)",
            with("logit_bias", json!({"50256": -100})),
        ),
        (
            "min_discount_percent 0 (F-21)",
            with("min_discount_percent", json!(0)),
        ),
        (
            "min_discount_percent 99.99 (F-21)",
            with("min_discount_percent", json!(99.99)),
        ),
        (
            "zdr true (F-26: 503 later, not 400)",
            with("zdr", json!(true)),
        ),
        ("user", with("user", json!("end-user-1"))),
    ];
    rejection::check_accepted(parse_request, &cases);
}

/// E-06: `n` is the protocol's field; the codec carries it
/// (`Sampling::choices`), and the gateway refuses other than 1 (its test:
/// `router-core`'s `several_choices_are_refused_naming_n`).
#[test]
fn n_and_best_of_are_carried_for_the_caller_to_decide() {
    for n in [0, 1, 2] {
        let parsed = accept(&with("n", json!(n)));
        assert_eq!(parsed.request.sampling.choices, Some(n));
        let parsed = accept(&with("best_of", json!(n)));
        assert_eq!(parsed.request.sampling.best_of, Some(n));
        // No supplier request carries more than one.
        assert_eq!(
            parsed.request.refuse_several_choices().is_ok(),
            n == 1,
            "best_of {n}"
        );
    }
    let plain = serde_json::to_vec(&base()).unwrap();
    let parsed = accept(&plain);
    assert_eq!(parsed.request.sampling.choices, None);
    assert_eq!(parsed.request.sampling.best_of, None);
}

#[test]
fn n_and_best_of_one_together_are_accepted() {
    // E-06
    let mut body = base();
    body["n"] = json!(1);
    body["best_of"] = json!(1);
    accept(&serde_json::to_vec(&body).unwrap());
}

#[test]
fn max_tokens_defaults_to_128() {
    // E-04, Q-17: the Chat-protocol request carries a 128-token limit.
    assert_eq!(DEFAULT_MAX_TOKENS, 128);
    let parsed = accept(&serde_json::to_vec(&base()).unwrap());
    assert_eq!(parsed.request.sampling.max_output_tokens, Some(128));
    let parsed = accept(&with("max_tokens", Value::Null));
    assert_eq!(parsed.request.sampling.max_output_tokens, Some(128));
    let parsed = accept(&with("max_tokens", json!(7)));
    assert_eq!(parsed.request.sampling.max_output_tokens, Some(7));
}

#[test]
fn the_prompt_becomes_one_user_message_on_the_chat_path() {
    // E-09, CF-11
    for prompt in [json!("Say hi"), json!(["Say hi"])] {
        let parsed = accept(&with("prompt", prompt));
        let request = &parsed.request;
        assert_eq!(request.model, "m");
        assert_eq!(request.inbound, Some(Protocol::Completions));
        assert_eq!(request.messages.len(), 1);
        let message = &request.messages[0];
        assert_eq!(message.role, Role::User);
        assert!(message.content_was_string);
        assert_eq!(
            message.content,
            vec![ContentPart::Text {
                text: "Say hi".to_owned(),
                cache_control: None
            }]
        );
        assert!(request.tools.is_empty());
        assert!(request.native.is_none());
        assert!(!request.stream);
    }
}

#[test]
fn echo_hands_the_prompt_back() {
    // E-05
    let parsed = accept(&with("echo", json!(true)));
    assert_eq!(parsed.echo.as_deref(), Some("Say hi"));
    assert_eq!(accept(&with("echo", json!(false))).echo, None);
    assert_eq!(accept(&without("echo")).echo, None);
}

#[test]
fn common_fields_reach_the_canonical_request() {
    // E-12, F-21, F-26
    let body = json!({
        "model": "m", "prompt": "p", "stream": true, "user": "u-1",
        "zdr": true, "min_discount_percent": 12.5, "x_custom": 1,
        "temperature": 1.5, "top_p": 0.5, "seed": -3, "stop": "END",
        "presence_penalty": 1, "frequency_penalty": -1
    });
    let (parsed, routing) = parse_routed(&serde_json::to_vec(&body).unwrap()).unwrap();
    let request = parsed.request;
    assert!(request.stream);
    assert_eq!(request.end_user.as_deref(), Some("u-1"));
    assert!(routing.zdr);
    assert_eq!(
        routing.min_discount,
        Some(Percent {
            units: 125,
            scale: 1
        })
    );
    assert_eq!(request.sampling.temperature, Some(1.5));
    assert_eq!(request.sampling.top_p, Some(0.5));
    assert_eq!(request.sampling.seed, Some(-3));
    assert_eq!(request.sampling.stop, vec!["END".to_owned()]);
    assert_eq!(request.sampling.presence_penalty, Some(1.0));
    assert_eq!(request.sampling.frequency_penalty, Some(-1.0));
    // Unknown fields are dropped: nothing of `x_custom` survives.
    let canonical = serde_json::to_string(&request).unwrap();
    assert!(!canonical.contains("x_custom"), "{canonical}");
}
