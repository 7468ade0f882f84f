//! `POST /v1/responses`: the `response` object and its `response.*` events.

use router_mock_supplier::{
    DEFAULT_THINKING_SIGNATURE, MockReply, MockSupplier, MockToolCall, MockUsage, Script,
};
use serde_json::{Value, json};

use crate::harness::{Protocol, start, typed_payloads, types};

fn request(model: &str, stream: bool) -> Value {
    json!({
        "model": model,
        "stream": stream,
        "instructions": "Be brief.",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]}],
    })
}

async fn response(mock: &MockSupplier, body: &Value) -> Value {
    let response = Protocol::Responses.post(mock, body).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    response.json().await.unwrap()
}

async fn stream(mock: &MockSupplier, body: &Value) -> Vec<Value> {
    let response = Protocol::Responses.post(mock, body).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let events = typed_payloads(&response.text().await.unwrap());
    for (number, event) in events.iter().enumerate() {
        assert_eq!(event["sequence_number"], number, "{event}");
    }
    events
}

/// The output a stream builds from its item and delta events, checking that
/// every delta belongs to the item currently open.
fn reassemble(events: &[Value]) -> Vec<Value> {
    let mut items: Vec<Value> = Vec::new();
    let mut done: Vec<Value> = Vec::new();
    for event in events {
        let kind = event["type"].as_str().unwrap();
        if kind == "response.output_item.added" {
            assert_eq!(event["output_index"], items.len());
            items.push(event["item"].clone());
            continue;
        }
        if kind == "response.output_item.done" {
            let index = event["output_index"].as_u64().unwrap() as usize;
            assert_eq!(index, done.len());
            done.push(event["item"].clone());
            continue;
        }
        let Some(index) = event["output_index"].as_u64() else {
            continue;
        };
        let item = &mut items[index as usize];
        assert_eq!(event["item_id"], item["id"], "{event}");
        assert_eq!(
            done.len(),
            index as usize,
            "deltas come before the item is done"
        );
        match kind {
            "response.reasoning_summary_part.added" => {
                item["summary"]
                    .as_array_mut()
                    .unwrap()
                    .push(event["part"].clone());
            }
            "response.reasoning_summary_text.delta" => {
                let part = &mut item["summary"][event["summary_index"].as_u64().unwrap() as usize];
                let text = part["text"].as_str().unwrap().to_owned();
                part["text"] = json!(text + event["delta"].as_str().unwrap());
            }
            "response.content_part.added" => {
                item["content"]
                    .as_array_mut()
                    .unwrap()
                    .push(event["part"].clone());
            }
            "response.output_text.delta" => {
                let part = &mut item["content"][event["content_index"].as_u64().unwrap() as usize];
                let text = part["text"].as_str().unwrap().to_owned();
                part["text"] = json!(text + event["delta"].as_str().unwrap());
            }
            "response.function_call_arguments.delta" => {
                let text = item["arguments"].as_str().unwrap().to_owned();
                item["arguments"] = json!(text + event["delta"].as_str().unwrap());
            }
            "response.function_call_arguments.done" => {
                assert_eq!(event["arguments"], item["arguments"]);
            }
            "response.output_text.done"
            | "response.content_part.done"
            | "response.reasoning_summary_text.done"
            | "response.reasoning_summary_part.done" => {}
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(items.len(), done.len(), "every item is done");
    for (built, done) in items.iter().zip(&done) {
        match built["type"].as_str().unwrap() {
            "message" => assert_eq!(built["content"], done["content"]),
            "reasoning" => assert_eq!(built["summary"], done["summary"]),
            _ => assert_eq!(built["arguments"], done["arguments"]),
        }
    }
    done
}

#[tokio::test(flavor = "multi_thread")]
async fn json_reply_is_a_completed_response() {
    let mock = start().await;
    mock.enqueue(Script::Reply(MockReply {
        text: "Sunny.".into(),
        usage: Some(MockUsage {
            cached_tokens: Some(30),
            cache_creation_tokens: Some(5),
            ..MockUsage::tokens(50, 4)
        }),
        ..MockReply::default()
    }));
    let body = response(&mock, &request("gpt-up", false)).await;
    assert!(body["id"].as_str().unwrap().starts_with("resp_"), "{body}");
    assert_eq!(body["object"], "response");
    assert!(body["created_at"].is_u64());
    assert_eq!(body["status"], "completed");
    assert_eq!(body["error"], Value::Null);
    assert_eq!(body["incomplete_details"], Value::Null);
    assert_eq!(body["model"], "gpt-up");
    let output = body["output"].as_array().unwrap();
    assert_eq!(output.len(), 1);
    assert_eq!(output[0]["type"], "message");
    assert_eq!(output[0]["role"], "assistant");
    assert_eq!(output[0]["status"], "completed");
    assert!(output[0]["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(
        output[0]["content"],
        json!([{"type": "output_text", "text": "Sunny.", "annotations": [], "logprobs": []}])
    );
    assert_eq!(
        body["usage"],
        json!({
            "input_tokens": 50,
            "input_tokens_details": {"cached_tokens": 30},
            "output_tokens": 4,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 54,
        })
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn usage_estimate_counts_instructions_and_input() {
    let mock = start().await;
    mock.enqueue(Script::reply("12345678"));
    mock.enqueue(Script::reply("12345678"));
    let body = response(&mock, &request("m", false)).await;
    // "Be brief." is 9 characters, "Weather in Paris?" 17.
    assert_eq!(body["usage"]["input_tokens"], 26 / 4 + 1);
    assert_eq!(body["usage"]["output_tokens"], 3);
    let body = response(&mock, &json!({"model": "m", "input": "abcdefgh"})).await;
    assert_eq!(body["usage"]["input_tokens"], 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_runs_from_created_to_completed() {
    let mock = start().await;
    mock.enqueue(Script::Reply(MockReply {
        text: "It is sunny in Paris today.".into(),
        usage: Some(MockUsage {
            reasoning_tokens: Some(2),
            ..MockUsage::tokens(20, 8)
        }),
        ..MockReply::default()
    }));
    let events = stream(&mock, &request("gpt-up", true)).await;
    let names = types(&events);
    assert_eq!(
        names[..4],
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
        ]
    );
    assert_eq!(
        names[names.len() - 4..],
        [
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let deltas = names
        .iter()
        .filter(|name| **name == "response.output_text.delta")
        .count();
    assert!(deltas > 1, "text is split into several deltas");

    let created = &events[0]["response"];
    assert_eq!(created["status"], "in_progress");
    assert_eq!(created["output"], json!([]));
    assert_eq!(created["usage"], Value::Null);
    let completed = &events.last().unwrap()["response"];
    assert_eq!(completed["id"], created["id"]);
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["model"], "gpt-up");
    assert_eq!(
        completed["usage"],
        json!({
            "input_tokens": 20,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 8,
            "output_tokens_details": {"reasoning_tokens": 2},
            "total_tokens": 28,
        })
    );
    let output = reassemble(&events);
    assert_eq!(Value::Array(output.clone()), completed["output"]);
    assert_eq!(
        output[0]["content"][0]["text"],
        "It is sunny in Paris today."
    );
    assert_eq!(events[2]["item"]["status"], "in_progress");
    assert_eq!(events[2]["item"]["content"], json!([]));
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_calls_become_function_call_items() {
    let mock = start().await;
    let reply = MockReply {
        tool_calls: vec![
            MockToolCall::new("call_1", "get_weather", r#"{"city": "Paris", "unit": "C"}"#),
            MockToolCall::new("", "get_time", "{}"),
        ],
        ..MockReply::default()
    };
    mock.enqueue(Script::Reply(reply.clone()));
    mock.enqueue(Script::Reply(reply));
    let body = response(&mock, &request("m", false)).await;
    let output = body["output"].as_array().unwrap();
    assert_eq!(output.len(), 2, "no empty message item: {body}");
    assert_eq!(output[0]["type"], "function_call");
    assert_eq!(output[0]["call_id"], "call_1");
    assert_eq!(output[0]["name"], "get_weather");
    assert_eq!(output[0]["arguments"], r#"{"city": "Paris", "unit": "C"}"#);
    assert_eq!(output[0]["status"], "completed");
    assert!(output[0]["id"].as_str().unwrap().starts_with("fc_"));
    assert_eq!(output[1]["call_id"], "call_mock_1");
    assert_ne!(output[0]["id"], output[1]["id"]);
    assert_eq!(body["status"], "completed");

    let events = stream(&mock, &request("m", true)).await;
    let output = reassemble(&events);
    assert_eq!(output[0]["arguments"], r#"{"city": "Paris", "unit": "C"}"#);
    assert_eq!(output[1]["arguments"], "{}");
    let fragments = events
        .iter()
        .filter(|event| {
            event["type"] == "response.function_call_arguments.delta" && event["output_index"] == 0
        })
        .count();
    assert!(fragments > 1, "arguments are streamed in fragments");
    let added = &events[2]["item"];
    assert_eq!(added["arguments"], "");
    assert_eq!(added["call_id"], "call_1");
    assert_eq!(added["name"], "get_weather");
}

#[tokio::test(flavor = "multi_thread")]
async fn reasoning_becomes_a_reasoning_item_with_summary() {
    let mock = start().await;
    let reply = MockReply {
        reasoning_content: Some("The user wants weather.".into()),
        text: "Sunny.".into(),
        ..MockReply::default()
    };
    mock.enqueue(Script::Reply(reply.clone()));
    mock.enqueue(Script::Reply(reply));
    mock.enqueue(Script::Reply(MockReply {
        reasoning_content: Some("Signed thought.".into()),
        thinking_signature: Some("ZW5j".into()),
        ..MockReply::default()
    }));

    let mut asking = request("m", false);
    asking["include"] = json!(["reasoning.encrypted_content"]);
    let body = response(&mock, &asking).await;
    let reasoning = &body["output"][0];
    assert_eq!(reasoning["type"], "reasoning");
    assert!(reasoning["id"].as_str().unwrap().starts_with("rs_"));
    assert_eq!(
        reasoning["summary"],
        json!([{"type": "summary_text", "text": "The user wants weather."}])
    );
    assert_eq!(reasoning["encrypted_content"], DEFAULT_THINKING_SIGNATURE);
    assert_eq!(body["output"][1]["type"], "message");

    let events = stream(&mock, &request("m", true)).await;
    let names = types(&events);
    assert_eq!(
        names[2..5],
        [
            "response.output_item.added",
            "response.reasoning_summary_part.added",
            "response.reasoning_summary_text.delta",
        ]
    );
    let output = reassemble(&events);
    assert_eq!(output[0]["summary"][0]["text"], "The user wants weather.");
    assert!(
        output[0].get("encrypted_content").is_none(),
        "not asked for, not scripted"
    );
    assert_eq!(output[1]["content"][0]["text"], "Sunny.");

    let body = response(&mock, &request("m", false)).await;
    assert_eq!(body["output"][0]["encrypted_content"], "ZW5j");
    assert_eq!(body["output"].as_array().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn length_ends_incomplete() {
    let mock = start().await;
    let reply = MockReply {
        finish_reason: Some("length".into()),
        ..MockReply::text("cut short")
    };
    mock.enqueue(Script::Reply(reply.clone()));
    mock.enqueue(Script::Reply(reply));
    mock.enqueue(Script::Reply(MockReply {
        finish_reason: Some("content_filter".into()),
        ..MockReply::default()
    }));
    let body = response(&mock, &request("m", false)).await;
    assert_eq!(body["status"], "incomplete");
    assert_eq!(
        body["incomplete_details"],
        json!({"reason": "max_output_tokens"})
    );
    assert_eq!(body["output"][0]["status"], "incomplete");

    let events = stream(&mock, &request("m", true)).await;
    let last = events.last().unwrap();
    assert_eq!(last["type"], "response.incomplete");
    assert_eq!(last["response"]["status"], "incomplete");
    assert_eq!(
        last["response"]["incomplete_details"]["reason"],
        "max_output_tokens"
    );
    assert!(!types(&events).contains(&"response.completed"));

    let body = response(&mock, &request("m", false)).await;
    assert_eq!(body["incomplete_details"]["reason"], "content_filter");
}

#[tokio::test(flavor = "multi_thread")]
async fn provider_extras_add_unknown_fields_and_one_unknown_event() {
    let mock = start().await;
    let reply = MockReply {
        provider_extras: true,
        tool_calls: vec![MockToolCall::new("c", "f", "{}")],
        ..MockReply::text("Hi there")
    };
    mock.enqueue(Script::Reply(reply.clone()));
    mock.enqueue(Script::Reply(reply));
    let body = response(&mock, &request("m", false)).await;
    assert_eq!(body["provider_x"], 1);
    let output = body["output"].as_array().unwrap();
    assert_eq!(output.len(), 2);
    assert!(output.iter().all(|item| item["provider_x"] == 1));

    let events = stream(&mock, &request("m", true)).await;
    let names = types(&events);
    assert_eq!(
        names
            .iter()
            .filter(|name| **name == "response.provider_event")
            .count(),
        1
    );
    let at = names
        .iter()
        .position(|name| *name == "response.provider_event")
        .unwrap();
    assert_eq!(names[at - 1], "response.output_item.added", "{names:?}");
    assert_eq!(events[0]["response"]["provider_x"], 1);
    assert_eq!(events.last().unwrap()["response"]["provider_x"], 1);
    assert!(
        events
            .iter()
            .filter(|event| event["type"] == "response.output_item.done")
            .all(|event| event["item"]["provider_x"] == 1)
    );
    assert_eq!(*names.last().unwrap(), "response.completed");
}

#[tokio::test(flavor = "multi_thread")]
async fn status_script_sends_the_openai_envelope() {
    let mock = start().await;
    mock.enqueue(Script::Status {
        status: 429,
        body: None,
        retry_after: Some("2".into()),
    });
    let response = Protocol::Responses.post(&mock, &request("m", true)).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "2");
    let body: Value = response.json().await.unwrap();
    Protocol::Responses.error_message(&body);
    assert_eq!(body["error"]["type"], "rate_limit_error");
}
