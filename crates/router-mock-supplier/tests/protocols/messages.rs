//! `POST /v1/messages`: the `message` object and its named event stream.

use router_mock_supplier::{
    DEFAULT_THINKING_SIGNATURE, MockReply, MockToolCall, MockUsage, Script,
};
use serde_json::{Value, json};

use crate::harness::{Protocol, start, typed_payloads, types};

fn request(model: &str, stream: bool) -> Value {
    json!({
        "model": model,
        "max_tokens": 1024,
        "stream": stream,
        "system": "You are terse.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]}],
    })
}

async fn message(mock: &router_mock_supplier::MockSupplier, model: &str) -> Value {
    let response = Protocol::Messages.post(mock, &request(model, false)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    response.json().await.unwrap()
}

async fn stream(mock: &router_mock_supplier::MockSupplier, model: &str) -> Vec<Value> {
    let response = Protocol::Messages.post(mock, &request(model, true)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    typed_payloads(&response.text().await.unwrap())
}

/// The `content` a stream builds, block by block, checking that every block
/// is started, changed only by deltas of its own kind, and stopped in order.
fn reassemble(events: &[Value]) -> Vec<Value> {
    let mut blocks: Vec<Value> = Vec::new();
    let mut partial_json: Vec<String> = Vec::new();
    let mut open: Option<usize> = None;
    for event in events {
        match event["type"].as_str().unwrap() {
            "content_block_start" => {
                assert_eq!(open, None, "blocks do not overlap");
                let index = event["index"].as_u64().unwrap() as usize;
                assert_eq!(index, blocks.len(), "indexes count up from 0");
                blocks.push(event["content_block"].clone());
                partial_json.push(String::new());
                open = Some(index);
            }
            "content_block_delta" => {
                let index = event["index"].as_u64().unwrap() as usize;
                assert_eq!(open, Some(index));
                let block = &mut blocks[index];
                let delta = &event["delta"];
                match (
                    block["type"].as_str().unwrap(),
                    delta["type"].as_str().unwrap(),
                ) {
                    ("text", "text_delta") => {
                        let text = block["text"].as_str().unwrap().to_owned();
                        block["text"] = json!(text + delta["text"].as_str().unwrap());
                    }
                    ("thinking", "thinking_delta") => {
                        let text = block["thinking"].as_str().unwrap().to_owned();
                        block["thinking"] = json!(text + delta["thinking"].as_str().unwrap());
                    }
                    ("thinking", "signature_delta") => {
                        block["signature"] = delta["signature"].clone();
                    }
                    ("tool_use", "input_json_delta") => {
                        partial_json[index].push_str(delta["partial_json"].as_str().unwrap());
                    }
                    (block, delta) => panic!("{delta} on a {block} block"),
                }
            }
            "content_block_stop" => {
                let index = event["index"].as_u64().unwrap() as usize;
                assert_eq!(open.take(), Some(index));
                if blocks[index]["type"] == "tool_use" {
                    let text = &partial_json[index];
                    blocks[index]["input"] = if text.is_empty() {
                        json!({})
                    } else {
                        serde_json::from_str(text).unwrap()
                    };
                }
            }
            _ => {}
        }
    }
    assert_eq!(open, None, "every block is stopped");
    blocks
}

#[tokio::test(flavor = "multi_thread")]
async fn json_reply_is_a_message_with_split_cache_usage() {
    let mock = start().await;
    mock.enqueue(Script::Reply(MockReply {
        text: "Sunny, 21 °C.".into(),
        usage: Some(MockUsage {
            cached_tokens: Some(60),
            cache_creation_tokens: Some(25),
            reasoning_tokens: Some(4),
            ..MockUsage::tokens(100, 9)
        }),
        ..MockReply::default()
    }));
    let body = message(&mock, "claude-up").await;
    assert!(body["id"].as_str().unwrap().starts_with("msg_"), "{body}");
    let expected = json!({
        "id": body["id"],
        "type": "message",
        "role": "assistant",
        "model": "claude-up",
        "content": [{"type": "text", "text": "Sunny, 21 °C."}],
        "stop_reason": "end_turn",
        "stop_sequence": null,
        "usage": {
            "input_tokens": 15,
            "cache_creation_input_tokens": 25,
            "cache_read_input_tokens": 60,
            "output_tokens": 9,
        },
    });
    assert_eq!(body, expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn usage_estimate_counts_system_and_messages() {
    let mock = start().await;
    mock.enqueue(Script::reply("12345678"));
    let body = message(&mock, "m").await;
    // "You are terse." is 14 characters, "Weather in Paris?" 17.
    assert_eq!(body["usage"]["input_tokens"], 31 / 4 + 1);
    assert_eq!(body["usage"]["output_tokens"], 3);
    assert_eq!(body["usage"]["cache_read_input_tokens"], 0);
    assert_eq!(body["usage"]["cache_creation_input_tokens"], 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_follows_the_event_flow_and_reports_usage() {
    let mock = start().await;
    mock.enqueue(Script::Reply(MockReply {
        text: "It is sunny in Paris today.".into(),
        usage: Some(MockUsage {
            cached_tokens: Some(10),
            ..MockUsage::tokens(40, 12)
        }),
        ..MockReply::default()
    }));
    let events = stream(&mock, "claude-up").await;
    let names = types(&events);
    assert_eq!(names[0], "message_start");
    assert_eq!(names[1], "ping");
    assert_eq!(names[names.len() - 2], "message_delta");
    assert_eq!(*names.last().unwrap(), "message_stop");
    assert!(
        names.iter().all(|name| [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
        .contains(name)),
        "{names:?}"
    );
    let text_deltas = names
        .iter()
        .filter(|name| **name == "content_block_delta")
        .count();
    assert!(text_deltas > 1, "text is split into several deltas");

    let start = &events[0]["message"];
    assert!(start["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(start["type"], "message");
    assert_eq!(start["role"], "assistant");
    assert_eq!(start["model"], "claude-up");
    assert_eq!(start["content"], json!([]));
    assert_eq!(start["stop_reason"], Value::Null);
    assert_eq!(start["stop_sequence"], Value::Null);
    assert_eq!(start["usage"]["input_tokens"], 30);
    assert_eq!(start["usage"]["cache_read_input_tokens"], 10);
    assert!(start["usage"]["output_tokens"].as_u64().unwrap() <= 1);

    assert_eq!(
        reassemble(&events),
        vec![json!({"type": "text", "text": "It is sunny in Paris today."})]
    );
    let delta = &events[events.len() - 2];
    assert_eq!(
        delta["delta"],
        json!({"stop_reason": "end_turn", "stop_sequence": null})
    );
    assert_eq!(
        delta["usage"],
        json!({
            "input_tokens": 30,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 10,
            "output_tokens": 12,
        })
    );
    assert_eq!(events.last().unwrap(), &json!({"type": "message_stop"}));
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_calls_become_tool_use_blocks() {
    let mock = start().await;
    let reply = MockReply {
        text: "Checking.".into(),
        tool_calls: vec![
            MockToolCall::new(
                "toolu_1",
                "get_weather",
                r#"{"city": "Paris", "days": [1, 2]}"#,
            ),
            MockToolCall::new("", "get_time", ""),
        ],
        ..MockReply::default()
    };
    mock.enqueue(Script::Reply(reply.clone()));
    mock.enqueue(Script::Reply(reply));
    let expected = json!([
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
         "input": {"city": "Paris", "days": [1, 2]}},
        {"type": "tool_use", "id": "toolu_mock_1", "name": "get_time", "input": {}},
    ]);

    let body = message(&mock, "m").await;
    assert_eq!(body["content"], expected);
    assert_eq!(body["stop_reason"], "tool_use");

    let events = stream(&mock, "m").await;
    let blocks = reassemble(&events);
    assert_eq!(Value::Array(blocks), expected);
    let starts: Vec<&Value> = events
        .iter()
        .filter(|event| event["type"] == "content_block_start")
        .collect();
    assert_eq!(
        starts[1]["content_block"],
        json!({"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}})
    );
    let fragments = events
        .iter()
        .filter(|event| event["index"] == 1 && event["delta"]["type"] == "input_json_delta")
        .count();
    assert!(fragments > 1, "tool input is streamed in fragments");
    assert_eq!(events[events.len() - 2]["delta"]["stop_reason"], "tool_use");
}

#[tokio::test(flavor = "multi_thread")]
async fn unparseable_tool_arguments_are_kept_raw() {
    let mock = start().await;
    let reply = MockReply {
        tool_calls: vec![MockToolCall::new("t", "f", "{broken")],
        ..MockReply::default()
    };
    mock.enqueue(Script::Reply(reply.clone()));
    mock.enqueue(Script::Reply(reply));
    let body = message(&mock, "m").await;
    assert_eq!(body["content"][0]["input"], "{broken");
    let events = stream(&mock, "m").await;
    let partial: String = events
        .iter()
        .filter_map(|event| event["delta"]["partial_json"].as_str())
        .collect();
    assert_eq!(partial, "{broken");
}

#[tokio::test(flavor = "multi_thread")]
async fn reasoning_becomes_a_signed_thinking_block() {
    let mock = start().await;
    mock.enqueue(Script::Reply(MockReply {
        reasoning_content: Some("The user wants weather.".into()),
        text: "Sunny.".into(),
        ..MockReply::default()
    }));
    mock.enqueue(Script::Reply(MockReply {
        reasoning_content: Some("Think it through first.".into()),
        thinking_signature: Some("c2lnbmVk".into()),
        text: "Done.".into(),
        ..MockReply::default()
    }));
    let body = message(&mock, "m").await;
    assert_eq!(
        body["content"],
        json!([
            {"type": "thinking", "thinking": "The user wants weather.",
             "signature": DEFAULT_THINKING_SIGNATURE},
            {"type": "text", "text": "Sunny."},
        ])
    );
    assert!(
        body["usage"].get("output_tokens_details").is_none(),
        "the Messages usage object has no thinking breakdown"
    );

    let events = stream(&mock, "m").await;
    assert_eq!(
        events[2],
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
    );
    let delta_kinds: Vec<&str> = events
        .iter()
        .filter(|event| event["index"] == 0 && event["type"] == "content_block_delta")
        .map(|event| event["delta"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(delta_kinds.last(), Some(&"signature_delta"));
    assert!(
        delta_kinds[..delta_kinds.len() - 1]
            .iter()
            .all(|kind| *kind == "thinking_delta")
    );
    assert!(delta_kinds.len() > 2);
    assert_eq!(
        reassemble(&events),
        vec![
            json!({"type": "thinking", "thinking": "Think it through first.", "signature": "c2lnbmVk"}),
            json!({"type": "text", "text": "Done."}),
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn finish_reasons_map_to_stop_reasons() {
    let mock = start().await;
    let cases = [
        ("length", None, "max_tokens"),
        ("content_filter", None, "refusal"),
        ("stop_sequence", Some("###"), "stop_sequence"),
        ("end_turn", None, "end_turn"),
        ("pause_turn", None, "pause_turn"),
    ];
    for (finish_reason, stop_sequence, _) in cases {
        let reply = MockReply {
            finish_reason: Some(finish_reason.into()),
            stop_sequence: stop_sequence.map(str::to_owned),
            ..MockReply::text("x")
        };
        mock.enqueue(Script::Reply(reply.clone()));
        mock.enqueue(Script::Reply(reply));
    }
    for (_, stop_sequence, stop_reason) in cases {
        let body = message(&mock, "m").await;
        assert_eq!(body["stop_reason"], stop_reason);
        assert_eq!(body["stop_sequence"], json!(stop_sequence));
        let events = stream(&mock, "m").await;
        assert_eq!(
            events[events.len() - 2]["delta"],
            json!({"stop_reason": stop_reason, "stop_sequence": stop_sequence})
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn provider_extras_add_unknown_fields_and_one_unknown_event() {
    let mock = start().await;
    let reply = MockReply {
        provider_extras: true,
        reasoning_content: Some("hm".into()),
        tool_calls: vec![MockToolCall::new("t", "f", "{}")],
        ..MockReply::text("Hi there")
    };
    mock.enqueue(Script::Reply(reply.clone()));
    mock.enqueue(Script::Reply(reply));
    let body = message(&mock, "m").await;
    assert_eq!(body["provider_x"], 1);
    let blocks = body["content"].as_array().unwrap();
    assert_eq!(blocks.len(), 3);
    assert!(blocks.iter().all(|block| block["provider_x"] == 1));

    let events = stream(&mock, "m").await;
    let names = types(&events);
    assert_eq!(
        names
            .iter()
            .filter(|name| **name == "provider_event")
            .count(),
        1
    );
    let at = names
        .iter()
        .position(|name| *name == "provider_event")
        .unwrap();
    assert_eq!(
        names[at - 1],
        "content_block_start",
        "mid-stream: {names:?}"
    );
    assert_eq!(events[0]["message"]["provider_x"], 1);
    assert!(
        events
            .iter()
            .filter(|event| event["type"] == "content_block_start")
            .all(|event| event["content_block"]["provider_x"] == 1)
    );
    assert_eq!(*names.last().unwrap(), "message_stop");
}

#[tokio::test(flavor = "multi_thread")]
async fn status_script_sends_the_messages_error_shape() {
    let mock = start().await;
    mock.enqueue(Script::Status {
        status: 429,
        body: None,
        retry_after: Some("7".into()),
    });
    mock.enqueue(Script::status(529));
    mock.enqueue(Script::status(400));
    let response = Protocol::Messages.post(&mock, &request("m", false)).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "7");
    let body: Value = response.json().await.unwrap();
    Protocol::Messages.error_message(&body);
    assert_eq!(body["error"]["type"], "rate_limit_error");

    let response = Protocol::Messages.post(&mock, &request("m", true)).await;
    assert_eq!(response.status(), 529);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "overloaded_error");

    let body: Value = Protocol::Messages
        .post(&mock, &request("m", false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
}
