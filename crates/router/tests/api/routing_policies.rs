//! Routing policies on every surface (section F): the discount floor
//! (F-21..F-25, GP-61, H-09) and zero data retention (F-26, F-27), read
//! from what the mock supplier received and what the wallet shows.

use crate::harness::*;
use serde_json::{Value, json};

/// `m-listed` is supply-priced against a list price of 1 USD/MTok both
/// ways: `listed-deep` (preferred) is 30 % off input but only 5 % off
/// output, `listed-even` 20 % off both and the only verified ZDR route.
pub const LISTED: &str = r#"
[[models]]
id = "m-listed"
pricing = "supply"
list_price = { input = 1_000_000_000, output = 1_000_000_000 }
max_output_tokens = 1000

[[routes]]
id = "listed-deep"
model = "m-listed"
supplier = "acme-secret-supplier"
upstream_model = "up-listed-deep"
protocol = "chat"
capabilities = ["streaming", "vision"]
priority = 10
internal_cost = { input = 1, output = 1 }
quote = { input = 700_000_000, output = 950_000_000 }

[[routes]]
id = "listed-even"
model = "m-listed"
supplier = "acme-secret-supplier"
upstream_model = "up-listed-even"
protocol = "chat"
capabilities = ["streaming", "vision"]
priority = 5
internal_cost = { input = 1, output = 1 }
quote = { input = 800_000_000, output = 800_000_000 }
zdr = true
"#;

/// The four inference surfaces (F-29).
#[derive(Debug, Clone, Copy)]
pub enum Surface {
    Chat,
    Responses,
    Messages,
    Completions,
}

pub const SURFACES: [Surface; 4] = [
    Surface::Chat,
    Surface::Responses,
    Surface::Messages,
    Surface::Completions,
];

impl Surface {
    /// A minimal text request for `model` on this surface, with `extra`
    /// fields merged in.
    pub fn body(self, model: &str, extra: Value) -> Value {
        let mut body = match self {
            Surface::Chat => hello(model),
            Surface::Responses => json!({"model": model, "input": "hello"}),
            Surface::Messages => messages_hello(model),
            Surface::Completions => json!({"model": model, "prompt": "hello"}),
        };
        if let Value::Object(fields) = extra {
            for (k, v) in fields {
                body[k] = v;
            }
        }
        body
    }

    pub async fn send(
        self,
        r: &TestRouter,
        key: &str,
        body: &Value,
        headers: &[(&str, &str)],
    ) -> reqwest::Response {
        let path = match self {
            Surface::Chat => "/v1/chat/completions",
            Surface::Responses => "/v1/responses",
            Surface::Messages => "/v1/messages",
            Surface::Completions => "/v1/completions",
        };
        let mut request = r.client.post(format!("{}{path}", r.base)).json(body);
        request = match self {
            Surface::Messages => request
                .header("x-api-key", key)
                .header("anthropic-version", "2023-06-01"),
            _ => request.bearer_auth(key),
        };
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send().await.unwrap()
    }

    /// Assert an error in this surface's envelope: the code on OpenAI
    /// surfaces, the status's type on Messages (P-02).
    pub async fn expect_error(self, resp: reqwest::Response, status: u16, code: &str) -> Value {
        match self {
            Surface::Messages => {
                let kind = match status {
                    400 => "invalid_request_error",
                    404 => "not_found_error",
                    503 => "overloaded_error",
                    other => panic!("no Messages type mapped for {other}"),
                };
                expect_messages_error(resp, status, kind).await
            }
            _ => expect_error(resp, status, code).await,
        }
    }
}

/// The upstream model the mock supplier saw on its latest call.
fn last_upstream(r: &TestRouter) -> String {
    r.mock
        .calls()
        .last()
        .and_then(|c| c.model().map(str::to_owned))
        .unwrap_or_default()
}

async fn wallet(r: &TestRouter, account: &str) -> (i64, i64) {
    let a = r.account(account).await;
    (
        a["balance_nano_usd"].as_i64().unwrap(),
        a["held_nano_usd"].as_i64().unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn discount_floor_filters_routes_on_every_surface() {
    // F-21, F-22 (input and output independently), F-23, F-24, GP-61
    // (exact decimals; 0 is an explicit floor).
    let r = TestRouter::start_with_catalog(LISTED).await;
    let c = r.rich_customer().await;
    for surface in SURFACES {
        let served =
            |floor: Value| surface.body("m-listed", json!({"min_discount_percent": floor}));
        // Without a floor the preferred route serves.
        let resp = surface
            .send(&r, &c.key, &surface.body("m-listed", json!({})), &[])
            .await;
        assert_eq!(resp.status(), 200, "{surface:?}");
        assert_eq!(last_upstream(&r), "up-listed-deep", "{surface:?}");
        // 30 % off input but 5 % off output does not meet 10 %.
        // 0 is an explicit floor every listed route meets (GP-61).
        let resp = surface.send(&r, &c.key, &served(json!(0)), &[]).await;
        assert_eq!(resp.status(), 200, "{surface:?}");
        assert_eq!(last_upstream(&r), "up-listed-deep", "{surface:?}");
        for floor in [json!(10), json!(19.99), json!(20), json!(20.00)] {
            let resp = surface.send(&r, &c.key, &served(floor.clone()), &[]).await;
            assert_eq!(resp.status(), 200, "{surface:?} {floor}");
            assert_eq!(last_upstream(&r), "up-listed-even", "{surface:?} {floor}");
        }
        let calls = r.mock.call_count();
        let before = wallet(&r, &c.account_id).await;
        // 20.000000001 % is not met by exactly 20 % (exact comparison).
        for floor in [json!(20.000000001), json!(20.01), json!(99.99)] {
            let resp = surface.send(&r, &c.key, &served(floor.clone()), &[]).await;
            let body = surface
                .expect_error(resp, 503, "min_discount_unavailable")
                .await;
            assert!(body.to_string().contains("discount"), "{body}");
        }
        // An explicit floor (0 included) on a model without a list price.
        for floor in [json!(0), json!(10)] {
            let body = surface.body("m-text", json!({"min_discount_percent": floor}));
            let resp = surface.send(&r, &c.key, &body, &[]).await;
            surface.expect_error(resp, 400, "list_price_unknown").await;
        }
        for bad in [json!(-0.01), json!(100), json!("5")] {
            let body = served(bad);
            let resp = surface.send(&r, &c.key, &body, &[]).await;
            surface.expect_error(resp, 400, "invalid_parameter").await;
        }
        assert_eq!(
            r.mock.call_count(),
            calls,
            "{surface:?}: refusals call nobody"
        );
        assert_eq!(
            wallet(&r, &c.account_id).await,
            before,
            "{surface:?}: refusals charge and hold nothing"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn absent_floor_with_unknown_list_price_charges_customer_rates() {
    // F-25: no floor, no list price → served at the configured rates, and
    // no discount is claimed in the reply.
    let r = TestRouter::start_with_catalog(LISTED).await;
    let c = r.rich_customer().await;
    for surface in SURFACES {
        let resp = surface
            .send(&r, &c.key, &surface.body("m-text", json!({})), &[])
            .await;
        assert_eq!(resp.status(), 200, "{surface:?}");
        let id = request_id(&resp);
        let text = resp.text().await.unwrap();
        assert!(!text.contains("discount"), "{surface:?}: {text}");
        let record = r.request_record(&id).await;
        // m-text's customer rates: 1 and 2 USD per million tokens, 1,000 and
        // 2,000 nano-USD a token (issue 33: "more than 0" passed any price).
        let usage = &record["usage"];
        let (input, output) = (
            usage["input_tokens"].as_i64().unwrap(),
            usage["output_tokens"].as_i64().unwrap(),
        );
        assert!(input > 0 && output > 0, "{record}");
        assert_eq!(
            record["charged_nano_usd"].as_i64().unwrap(),
            input * 1_000 + output * 2_000,
            "{surface:?}: {record}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_discounted_route_charges_its_own_quote() {
    // F-22 with G-05: the floor picked `listed-even`, so its quote is the price.
    let r = TestRouter::start_with_catalog(LISTED).await;
    let c = r.rich_customer().await;
    let resp = r
        .chat(
            &c.key,
            &Surface::Chat.body("m-listed", json!({"min_discount_percent": 15})),
        )
        .await;
    assert_eq!(resp.status(), 200);
    let id = request_id(&resp);
    let body: Value = resp.json().await.unwrap();
    let usage = &body["usage"];
    let tokens =
        usage["prompt_tokens"].as_i64().unwrap() + usage["completion_tokens"].as_i64().unwrap();
    let record = r.request_record(&id).await;
    // 0.8 USD per million tokens both ways is 800 nano-USD per token.
    assert_eq!(record["charged_nano_usd"].as_i64().unwrap(), tokens * 800);
}

#[tokio::test(flavor = "multi_thread")]
async fn image_input_with_an_unmet_floor_is_min_discount_unavailable() {
    // H-09: the floor's code, not image_capacity_unavailable.
    let r = TestRouter::start_with_catalog(LISTED).await;
    let c = r.rich_customer().await;
    let body = json!({
        "model": "m-listed",
        "min_discount_percent": 99.99,
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
        ]}]
    });
    expect_error(r.chat(&c.key, &body).await, 503, "min_discount_unavailable").await;
    assert_eq!(r.mock.call_count(), 0);
    assert_eq!(wallet(&r, &c.account_id).await.1, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn zdr_requests_use_only_verified_zdr_routes_on_every_surface() {
    // F-26: `zdr:true` keeps to ZDR routes, else 503 with nothing called,
    // held or charged; `zdr:false` is the default; `"true"` is a 400.
    let r = TestRouter::start_with_catalog(LISTED).await;
    let c = r.rich_customer().await;
    for surface in SURFACES {
        let resp = surface
            .send(
                &r,
                &c.key,
                &surface.body("m-listed", json!({"zdr": true})),
                &[],
            )
            .await;
        assert_eq!(resp.status(), 200, "{surface:?}");
        assert_eq!(last_upstream(&r), "up-listed-even", "{surface:?}");
        let resp = surface
            .send(
                &r,
                &c.key,
                &surface.body("m-listed", json!({"zdr": false})),
                &[],
            )
            .await;
        assert_eq!(resp.status(), 200, "{surface:?}");
        assert_eq!(last_upstream(&r), "up-listed-deep", "{surface:?}");

        let calls = r.mock.call_count();
        let before = wallet(&r, &c.account_id).await;
        for stream in [false, true] {
            let body = surface.body("m-text", json!({"zdr": true, "stream": stream}));
            let resp = surface.send(&r, &c.key, &body, &[]).await;
            surface
                .expect_error(resp, 503, "zdr_capacity_unavailable")
                .await;
        }
        // ZDR never relaxes the floor: the ZDR route is 20 % off, not 25 %.
        let body = surface.body("m-listed", json!({"zdr": true, "min_discount_percent": 25}));
        let resp = surface.send(&r, &c.key, &body, &[]).await;
        surface
            .expect_error(resp, 503, "min_discount_unavailable")
            .await;
        let resp = surface
            .send(
                &r,
                &c.key,
                &surface.body("m-listed", json!({"zdr": "true"})),
                &[],
            )
            .await;
        surface.expect_error(resp, 400, "invalid_parameter").await;
        assert_eq!(r.mock.call_count(), calls, "{surface:?}");
        assert_eq!(wallet(&r, &c.account_id).await, before, "{surface:?}");
    }
}
