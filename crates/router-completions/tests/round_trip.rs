//! Properties over generated requests: any prompt string and any valid
//! options survive `parse_request` into the canonical request unchanged
//! (E-03, E-09), and `echo` round-trips into the reply and the stream
//! (E-05, GP-55): the client's text is always `prompt + generated` when it
//! asked for the echo, and `generated` alone when it did not.

#![expect(clippy::unwrap_used)] // test code: a panic is the failure report

use proptest::prelude::*;
use router_canonical::sse::Decoder;
use router_canonical::{
    BlockDelta, BlockKind, ContentPart, NanoUsd, OutputBlock, Protocol, Response, Role, StopReason,
    StreamEvent, Usage,
};
use router_completions::{
    ClientStreamEncoder, CompletionStreamContext, ResponseContext, StreamEncoder, StreamEnd,
    encode_response, parse_request,
};
use router_wire_testkit::strategy::quarter;
use serde_json::{Map, Value, json};

/// Options a client may set, each `None` when left out of the body.
#[derive(Debug, Clone)]
struct Options {
    prompt_as_array: bool,
    echo: Option<bool>,
    max_tokens: Option<u32>,
    temperature: Option<f64>,
    top_p: Option<f64>,
    stop: Option<Vec<String>>,
    seed: Option<i64>,
    user: Option<String>,
    stream: Option<bool>,
    one_sample: bool,
    null_legacy_fields: bool,
    unknown: Option<(String, i64)>,
}

fn options() -> impl Strategy<Value = Options> {
    (
        (
            any::<bool>(),
            prop::option::of(any::<bool>()),
            prop::option::of(1..=u32::MAX),
            prop::option::of(quarter(0, 8)),
            prop::option::of(quarter(0, 4)),
            prop::option::of(prop::collection::vec(any::<String>(), 0..=4)),
        ),
        (
            prop::option::of(any::<i64>()),
            prop::option::of(any::<String>()),
            prop::option::of(any::<bool>()),
            any::<bool>(),
            any::<bool>(),
            prop::option::of(("x_[a-z0-9_]{0,12}", any::<i64>())),
        ),
    )
        .prop_map(
            |(
                (prompt_as_array, echo, max_tokens, temperature, top_p, stop),
                (seed, user, stream, one_sample, null_legacy_fields, unknown),
            )| Options {
                prompt_as_array,
                echo,
                max_tokens,
                temperature,
                top_p,
                stop,
                seed,
                user,
                stream,
                one_sample,
                null_legacy_fields,
                unknown,
            },
        )
}

fn body(prompt: &str, o: &Options) -> Vec<u8> {
    let mut b = Map::new();
    b.insert("model".into(), json!("acme/text"));
    let prompt = if o.prompt_as_array {
        json!([prompt])
    } else {
        json!(prompt)
    };
    b.insert("prompt".into(), prompt);
    let mut set = |key: &str, value: Option<Value>| {
        if let Some(value) = value {
            b.insert(key.to_owned(), value);
        }
    };
    set("echo", o.echo.map(Value::from));
    set("max_tokens", o.max_tokens.map(Value::from));
    set("temperature", o.temperature.map(Value::from));
    set("top_p", o.top_p.map(Value::from));
    set("stop", o.stop.clone().map(Value::from));
    set("seed", o.seed.map(Value::from));
    set("user", o.user.clone().map(Value::from));
    set("stream", o.stream.map(Value::from));
    if o.one_sample {
        set("n", Some(json!(1)));
        set("best_of", Some(json!(1)));
    }
    if o.null_legacy_fields {
        set("logprobs", Some(Value::Null));
        set("suffix", Some(Value::Null));
    }
    if let Some((name, value)) = &o.unknown {
        set(name, Some(json!(value)));
    }
    serde_json::to_vec(&Value::Object(b)).unwrap()
}

/// Split `text` into up to `pieces` deltas at char boundaries.
fn split(text: &str, cuts: &[usize]) -> Vec<String> {
    let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    let mut at: Vec<usize> = cuts
        .iter()
        .filter_map(|c| bounds.get(c % bounds.len().max(1)).copied())
        .collect();
    at.push(0);
    at.push(text.len());
    at.sort_unstable();
    at.dedup();
    at.windows(2).map(|w| text[w[0]..w[1]].to_owned()).collect()
}

/// The text of every choice of every chunk, in order, and the frames' data.
fn stream_texts(bytes: &[u8]) -> (Vec<String>, Vec<String>) {
    let mut decoder = Decoder::default();
    let mut frames = Vec::new();
    decoder.feed(bytes, &mut frames).unwrap();
    assert!(!decoder.has_partial());
    let data: Vec<String> = frames.into_iter().map(|f| f.data).collect();
    let mut texts = Vec::new();
    for d in &data {
        if d == "[DONE]" {
            continue;
        }
        let chunk: Value = serde_json::from_str(d).unwrap();
        assert_eq!(chunk["object"], "text_completion");
        for choice in chunk["choices"].as_array().unwrap() {
            texts.push(choice["text"].as_str().unwrap().to_owned());
        }
    }
    (texts, data)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn prompt_and_options_survive_parsing(prompt in any::<String>(), o in options()) {
        let parsed = parse_request(&body(&prompt, &o))
            .map_err(|err| TestCaseError::fail(format!("rejected: {err:?}")))?;
        let r = &parsed.request;
        prop_assert_eq!(r.inbound, Some(Protocol::Completions));
        prop_assert_eq!(r.messages.len(), 1);
        prop_assert_eq!(r.messages[0].role, Role::User);
        prop_assert!(r.messages[0].content_was_string);
        prop_assert_eq!(
            &r.messages[0].content,
            &vec![ContentPart::Text { text: prompt.clone(), cache_control: None }]
        );
        prop_assert_eq!(r.sampling.max_output_tokens, Some(o.max_tokens.unwrap_or(128)));
        prop_assert_eq!(r.sampling.temperature, o.temperature);
        prop_assert_eq!(r.sampling.top_p, o.top_p);
        prop_assert_eq!(&r.sampling.stop, &o.stop.clone().unwrap_or_default());
        prop_assert_eq!(r.sampling.seed, o.seed);
        prop_assert_eq!(&r.end_user, &o.user);
        prop_assert_eq!(r.stream, o.stream.unwrap_or(false));
        prop_assert!(r.native.is_none());
        let expected_echo = (o.echo == Some(true)).then(|| prompt.clone());
        prop_assert_eq!(&parsed.echo, &expected_echo);
    }

    #[test]
    fn echo_round_trips_into_the_reply(
        prompt in any::<String>(),
        echo in any::<bool>(),
        blocks in prop::collection::vec((any::<bool>(), "\\PC{0,12}"), 0..5),
    ) {
        let mut b = json!({"model": "acme/text", "prompt": prompt});
        b["echo"] = json!(echo);
        let parsed = parse_request(&serde_json::to_vec(&b).unwrap()).unwrap();
        let mut generated = String::new();
        let output = blocks
            .into_iter()
            .map(|(is_text, text)| {
                if is_text {
                    generated.push_str(&text);
                    OutputBlock::Text { text }
                } else {
                    OutputBlock::Thinking { text, signature: None }
                }
            })
            .collect();
        let response = Response {
            id: "sup".into(),
            model: "sup-model".into(),
            output,
            stop_reason: StopReason::EndTurn,
            stop_sequence: None,
            usage: Usage { input_tokens: 3, output_tokens: 4, ..Usage::default() },
            created: 0,
        };
        let ctx = ResponseContext {
            id: "cmpl-1",
            model: "acme/text",
            created: 1,
            cost: Some(NanoUsd(10)),
            echo: parsed.echo.as_deref(),
        };
        let reply: Value = serde_json::from_slice(&encode_response(&response, &ctx)).unwrap();
        let expected = if echo { format!("{prompt}{generated}") } else { generated };
        prop_assert_eq!(reply["choices"][0]["text"].as_str(), Some(expected.as_str()));
    }

    #[test]
    fn echo_round_trips_into_the_stream(
        prompt in any::<String>(),
        echo in any::<bool>(),
        // Often empty: the echo must still come out when no text does.
        generated in prop_oneof![Just(String::new()), "\\PC{1,40}"],
        cuts in prop::collection::vec(any::<usize>(), 0..6),
        start in any::<bool>(),
    ) {
        let b = json!({"model": "acme/text", "prompt": [prompt], "echo": echo, "stream": true});
        let parsed = parse_request(&serde_json::to_vec(&b).unwrap()).unwrap();
        let mut encoder = StreamEncoder::new(CompletionStreamContext {
            id: "cmpl-1".into(),
            model: "acme/text".into(),
            created: 1,
            echo: parsed.echo.clone(),
        });
        let mut out = Vec::new();
        if start {
            encoder.event(&StreamEvent::Start { id: "s".into(), model: "m".into() }, &mut out);
        }
        encoder.event(&StreamEvent::BlockStart { index: 0, block: BlockKind::Text }, &mut out);
        for piece in split(&generated, &cuts) {
            encoder.event(
                &StreamEvent::Delta { index: 0, delta: BlockDelta::Text(piece) },
                &mut out,
            );
        }
        encoder.event(&StreamEvent::BlockStop { index: 0 }, &mut out);
        encoder.finish(&StreamEnd::new(&StopReason::MaxTokens, &Usage::default()).with_cost(Some(NanoUsd(1))), &mut out);

        let (texts, data) = stream_texts(&out);
        let expected = if echo { format!("{prompt}{generated}") } else { generated.clone() };
        prop_assert_eq!(texts.concat(), expected);
        // GP-55: the echoed prompt is the first chunk, whole.
        if echo && !prompt.is_empty() {
            prop_assert_eq!(texts.first(), Some(&prompt));
        }
        // E-08, GP-04: finish chunk, usage chunk with cost, then [DONE].
        prop_assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
        let usage: Value = serde_json::from_str(&data[data.len() - 2]).unwrap();
        prop_assert_eq!(&usage["choices"], &json!([]));
        prop_assert!(usage["usage"]["cost"].is_number());
        let finish: Value = serde_json::from_str(&data[data.len() - 3]).unwrap();
        prop_assert_eq!(&finish["choices"][0]["finish_reason"], &json!("length"));
    }
}
