//! Router thinking signatures (issue 14 item 9, D-29, D-32): a Messages
//! client served by a Chat or Responses route gets thinking blocks signed by
//! the router; sent back, they are restored for the dialect they came from
//! and dropped for any other route; forged ones are refused before any
//! supplier call; Anthropic signatures pass through untouched.

use crate::harness::*;
use router_core::SealKey;
use router_core::thinking_seal::SealedDialect;
use router_mock_supplier::{MockReply, MockUsage, Script};
use serde_json::{Value, json};

const REASONING: &str = "The user wants a greeting.";
const ENCRYPTED: &str = "enc-opaque-reasoning-state";

fn thinking_reply(signature: Option<&str>) -> Script {
    Script::Reply(MockReply {
        reasoning_content: Some(REASONING.into()),
        thinking_signature: signature.map(str::to_owned),
        usage: Some(MockUsage::tokens(10, 5)),
        ..MockReply::text("Hello!")
    })
}

fn first_turn(model: &str, stream: bool) -> Value {
    json!({"model": model, "max_tokens": 256, "stream": stream, "system": "Be kind.",
        "messages": [{"role": "user", "content": "Greet me."}]})
}

/// The next turn, carrying `blocks` (the previous reply's content) back.
fn next_turn(model: &str, blocks: &Value) -> Value {
    json!({"model": model, "max_tokens": 256, "system": "Be kind.",
    "messages": [
        {"role": "user", "content": "Greet me."},
        {"role": "assistant", "content": blocks},
        {"role": "user", "content": "Again."}
    ]})
}

fn thinking_block(signature: &str) -> Value {
    json!([{"type": "thinking", "thinking": REASONING, "signature": signature},
           {"type": "text", "text": "Hello!"}])
}

/// The content blocks of a reply, streamed or not, as the client assembles them.
async fn reply_blocks(resp: reqwest::Response, stream: bool) -> Value {
    assert_eq!(resp.status(), 200);
    if !stream {
        let body: Value = resp.json().await.unwrap();
        return body["content"].clone();
    }
    let mut blocks: Vec<Value> = Vec::new();
    let mut stopped = Vec::new();
    for (name, data) in sse_events(&resp.text().await.unwrap()) {
        let index = data["index"].as_u64().unwrap_or(0) as usize;
        match name.as_str() {
            "content_block_start" => blocks.push(data["content_block"].clone()),
            "content_block_delta" => {
                assert!(!stopped.contains(&index), "a delta after the block stopped");
                let block = &mut blocks[index];
                let delta = &data["delta"];
                match delta["type"].as_str().unwrap() {
                    "thinking_delta" => {
                        let text = block["thinking"].as_str().unwrap().to_owned();
                        block["thinking"] = json!(text + delta["thinking"].as_str().unwrap());
                    }
                    "signature_delta" => block["signature"] = delta["signature"].clone(),
                    "text_delta" => {
                        let text = block["text"].as_str().unwrap().to_owned();
                        block["text"] = json!(text + delta["text"].as_str().unwrap());
                    }
                    _ => {}
                }
            }
            "content_block_stop" => stopped.push(index),
            _ => {}
        }
    }
    assert_eq!(stopped.len(), blocks.len(), "every block stops");
    Value::Array(blocks)
}

fn signature_of(blocks: &Value) -> String {
    let thinking = blocks
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "thinking")
        .unwrap_or_else(|| panic!("no thinking block in {blocks}"));
    assert_eq!(thinking["thinking"], REASONING);
    thinking["signature"].as_str().unwrap().to_owned()
}

/// The reasoning items of a Responses request body.
fn reasoning_items(body: &Value) -> Vec<Value> {
    body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == "reasoning")
        .cloned()
        .collect()
}

/// The thinking blocks of a Messages request body.
fn thinking_blocks(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|b| b["type"] == "thinking")
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn responses_route_thinking_gets_a_router_signature_that_restores_encrypted_content() {
    for stream in [false, true] {
        let (r, c) = TestRouter::start_rich().await;
        r.mock
            .enqueue_for("up-via-responses", thinking_reply(Some(ENCRYPTED)));
        let resp = r
            .messages(&c.key, &first_turn("m-via-responses", stream))
            .await;
        let blocks = reply_blocks(resp, stream).await;
        let signature = signature_of(&blocks);
        assert!(signature.starts_with("rtr1."), "{signature}");
        assert!(!signature.contains(ENCRYPTED), "the replay data is encoded");

        r.mock
            .enqueue_for("up-via-responses", Script::reply("Hello again!"));
        let resp = r
            .messages(&c.key, &next_turn("m-via-responses", &blocks))
            .await;
        assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
        let calls = r.mock.calls_for("up-via-responses");
        assert_eq!(calls.len(), 2);
        let items = reasoning_items(&calls[1].body);
        assert_eq!(items.len(), 1, "stream {stream}: {}", calls[1].body);
        assert_eq!(items[0]["encrypted_content"], ENCRYPTED);
        assert_eq!(items[0]["summary"][0]["text"], REASONING);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn chat_route_thinking_gets_a_non_empty_router_signature() {
    for stream in [false, true] {
        let (r, c) = TestRouter::start_rich().await;
        r.mock.enqueue_for("up-via-chat", thinking_reply(None));
        let resp = r.messages(&c.key, &first_turn("m-via-chat", stream)).await;
        let blocks = reply_blocks(resp, stream).await;
        let signature = signature_of(&blocks);
        assert!(signature.starts_with("rtr1."), "{signature}");

        // Back on the Chat route: accepted; Chat carries no reasoning history.
        r.mock.enqueue_for("up-via-chat", Script::reply("Hi."));
        let resp = r.messages(&c.key, &next_turn("m-via-chat", &blocks)).await;
        assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
        let calls = r.mock.calls_for("up-via-chat");
        assert_eq!(calls.len(), 2);
        assert!(!calls[1].body.to_string().contains("rtr1."));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_router_signed_block_sent_to_a_native_messages_route_is_dropped() {
    let (r, c) = TestRouter::start_rich().await;
    r.mock
        .enqueue_for("up-via-responses", thinking_reply(Some(ENCRYPTED)));
    let resp = r
        .messages(&c.key, &first_turn("m-via-responses", false))
        .await;
    let blocks = reply_blocks(resp, false).await;

    r.mock.enqueue_for("up-via-messages", Script::reply("Hi."));
    let resp = r
        .messages(&c.key, &next_turn("m-via-messages", &blocks))
        .await;
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    let calls = r.mock.calls_for("up-via-messages");
    assert_eq!(calls.len(), 1);
    assert!(
        thinking_blocks(&calls[0].body).is_empty(),
        "{}",
        calls[0].body
    );
    // The rest of the assistant turn is kept.
    assert_eq!(calls[0].body["messages"][1]["content"][0]["text"], "Hello!");
}

#[tokio::test(flavor = "multi_thread")]
async fn anthropic_signatures_pass_through_untouched() {
    let (r, c) = TestRouter::start_rich().await;
    r.mock.enqueue_for("up-via-messages", Script::reply("Hi."));
    let resp = r
        .messages(
            &c.key,
            &next_turn(
                "m-via-messages",
                &thinking_block("EqQBCkgIAxABGAIiQL-anthropic"),
            ),
        )
        .await;
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    let calls = r.mock.calls_for("up-via-messages");
    let blocks = thinking_blocks(&calls[0].body);
    assert_eq!(blocks.len(), 1);
    assert_eq!(blocks[0]["signature"], "EqQBCkgIAxABGAIiQL-anthropic");

    // A native reply's signature reaches the client as the supplier sent it.
    r.mock.enqueue_for(
        "up-via-messages",
        thinking_reply(Some("sig-from-anthropic")),
    );
    let resp = r
        .messages(&c.key, &first_turn("m-via-messages", false))
        .await;
    let blocks = reply_blocks(resp, false).await;
    assert_eq!(signature_of(&blocks), "sig-from-anthropic");
}

#[tokio::test(flavor = "multi_thread")]
async fn forged_foreign_or_unknown_router_signatures_are_refused_before_any_supplier_call() {
    let (r, c) = TestRouter::start_rich().await;
    r.mock
        .enqueue_for("up-via-responses", thinking_reply(Some(ENCRYPTED)));
    let resp = r
        .messages(&c.key, &first_turn("m-via-responses", false))
        .await;
    let genuine = signature_of(&reply_blocks(resp, false).await);
    let (body, _) = genuine.rsplit_once('.').unwrap();
    let foreign = SealKey::from_bytes([9; 32]).seal(SealedDialect::Responses, ENCRYPTED, REASONING);
    let calls_before = r.mock.call_count();
    for bad in [
        format!("{body}.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
        foreign,
        genuine.replacen("rtr1.", "rtr7.", 1),
        genuine[..genuine.len() - 3].to_owned(),
        "rtr1.not-base64!".to_owned(),
    ] {
        for model in ["m-via-responses", "m-via-messages"] {
            let resp = r
                .messages(&c.key, &next_turn(model, &thinking_block(&bad)))
                .await;
            let error = expect_messages_error(resp, 400, "invalid_request_error").await;
            // `system` comes first in the canonical form; the client's index is 1.
            let message = error["error"]["message"].as_str().unwrap();
            assert!(
                message.contains("messages[1].content[0].signature"),
                "{bad}: {message}"
            );
        }
    }
    // An edited thinking text no longer matches its genuine signature.
    let mut edited = thinking_block(&genuine);
    edited[0]["thinking"] = json!("Something else.");
    let resp = r
        .messages(&c.key, &next_turn("m-via-responses", &edited))
        .await;
    expect_messages_error(resp, 400, "invalid_request_error").await;
    assert_eq!(r.mock.call_count(), calls_before, "no supplier was called");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fallback_to_another_dialect_gets_the_history_of_its_own_route() {
    let (r, c) = TestRouter::start_rich().await;
    r.mock
        .enqueue_for("up-via-responses", thinking_reply(Some(ENCRYPTED)));
    let resp = r
        .messages(&c.key, &first_turn("m-via-responses", false))
        .await;
    let blocks = reply_blocks(resp, false).await;

    // Messages first (refuses), then Responses: the restore happens on the second.
    r.mock
        .enqueue_for("up-think-mf-messages", Script::status(400));
    r.mock
        .enqueue_for("up-think-mf-responses", Script::reply("From the fallback."));
    let resp = r
        .messages(&c.key, &next_turn("m-think-messages-first", &blocks))
        .await;
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    let native = r.mock.calls_for("up-think-mf-messages");
    assert_eq!(native.len(), 1);
    assert!(thinking_blocks(&native[0].body).is_empty());
    let fallback = r.mock.calls_for("up-think-mf-responses");
    assert_eq!(fallback.len(), 1);
    let items = reasoning_items(&fallback[0].body);
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["encrypted_content"], ENCRYPTED);

    // Responses first (refuses), then Messages: the block is dropped there.
    r.mock
        .enqueue_for("up-think-rf-responses", Script::status(400));
    r.mock
        .enqueue_for("up-think-rf-messages", Script::reply("From the fallback."));
    let resp = r
        .messages(&c.key, &next_turn("m-think-responses-first", &blocks))
        .await;
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    let first = r.mock.calls_for("up-think-rf-responses");
    assert_eq!(reasoning_items(&first[0].body).len(), 1);
    assert_eq!(
        reasoning_items(&first[0].body)[0]["encrypted_content"],
        ENCRYPTED
    );
    let fallback = r.mock.calls_for("up-think-rf-messages");
    assert_eq!(fallback.len(), 1);
    assert!(thinking_blocks(&fallback[0].body).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_seal_key_is_created_once_and_shared() {
    let r = TestRouter::start().await;
    let first = SealKey::load(r.db.database()).await.unwrap();
    let second = SealKey::load(r.db.database()).await.unwrap();
    assert_eq!(first.as_bytes(), second.as_bytes());
    // And it is the key the running router signs with.
    let c = r.rich_customer().await;
    r.mock.enqueue_for("up-via-chat", thinking_reply(None));
    let resp = r.messages(&c.key, &first_turn("m-via-chat", false)).await;
    let signature = signature_of(&reply_blocks(resp, false).await);
    assert!(first.verify(&signature, REASONING).unwrap().is_some());
}
