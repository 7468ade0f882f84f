//! The catalog over HTTP (section L, R-04..R-06, A-10, A-13, A-18):
//! `/v1/models`, supply, compare, the public catalog, releases and reload,
//! and the pricing change feed.

use crate::harness::*;
use reqwest::Method;
use serde_json::{Value, json};
use std::collections::HashSet;

/// Supplier identities of the test catalog: none may appear in any view.
const SECRETS: [&str; 6] = [
    "acme-secret-supplier",
    "up-text-primary",
    "text-primary",
    "supply-a",
    "127.0.0.1",
    "supplier-secret-key",
];

fn assert_anonymous(body: &str) {
    for secret in SECRETS {
        assert!(!body.contains(secret), "`{secret}` leaked: {body}");
    }
}

/// A key of a funded account with `scopes` and `extra` fields (policy).
async fn key(r: &TestRouter, scopes: &[&str], extra: Value) -> (String, String) {
    let c = r.rich_customer().await;
    let mut body = json!({"account_id": c.account_id, "scopes": scopes});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let created = r.new_key(body).await;
    (
        created["key"].as_str().unwrap().to_owned(),
        created["id"].as_str().unwrap_or_default().to_owned(),
    )
}

async fn get(r: &TestRouter, path: &str, key: Option<&str>) -> reqwest::Response {
    let mut req = r.client.get(format!("{}{path}", r.base));
    if let Some(key) = key {
        req = req.bearer_auth(key);
    }
    req.send().await.unwrap()
}

async fn get_json(r: &TestRouter, path: &str, key: Option<&str>) -> (u16, Value) {
    let resp = get(r, path, key).await;
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect()
}

/// L-01, L-02, L-03, R-04, R-05, GP-18, GP-59, A-18.
#[tokio::test]
async fn models_list_is_the_openai_envelope_of_the_keys_models() {
    let r = TestRouter::start().await;
    let (all, _) = key(&r, &["inference"], json!({})).await;
    let resp = get(&r, "/v1/models", Some(&all)).await;
    assert_eq!(resp.status(), 200);
    let text = resp.text().await.unwrap();
    assert_anonymous(&text);
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["object"], "list");
    assert!(body["pricing_checked_at"].is_null(), "{body}");
    assert!(body["pricing_observed_at"].is_string());
    assert!(body.get("pricing_updated_at").is_some());
    assert!(body["release"].is_i64(), "R-05: {body}");
    let version = body["pricing_version"].as_str().unwrap();
    assert_eq!(version.len(), 64);
    assert!(
        version
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    );
    let listed = ids(&body["data"]);
    for id in [
        "m-text",
        "m-supply",
        "vendor/model-x",
        "m-img",
        "m-video",
        "m-off",
    ] {
        assert!(listed.contains(&id.to_owned()), "{id} missing: {listed:?}");
    }
    assert!(
        !listed.contains(&"m-hidden".to_owned()),
        "hidden models are absent"
    );
    let text_model = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "m-text")
        .unwrap();
    assert_eq!(text_model["object"], "model");
    assert!(text_model["created"].is_i64());
    assert!(text_model["owned_by"].is_string());
    assert_eq!(text_model["aliases"], json!(["text-alias"]));
    assert_eq!(text_model["modality"], "text");
    assert_eq!(text_model["protocols"], json!(["chat"]));
    assert_eq!(text_model["capabilities"]["tools"], true);
    assert_eq!(text_model["pricing"]["input_usd_per_mtok"], json!(1));
    assert_eq!(text_model["pricing"]["output_usd_per_mtok"], json!(2));

    // L-02: unchanged catalog, same version; a narrower policy, another.
    let (again_status, again) = get_json(&r, "/v1/models", Some(&all)).await;
    assert_eq!(again_status, 200);
    assert_eq!(again["pricing_version"], body["pricing_version"]);
    let (narrow, _) = key(
        &r,
        &["inference"],
        json!({"allowed_models": ["text-alias"]}),
    )
    .await;
    let (_, only) = get_json(&r, "/v1/models", Some(&narrow)).await;
    assert_eq!(ids(&only["data"]), ["m-text"], "L-03, A-18");
    assert_ne!(only["pricing_version"], body["pricing_version"]);
    // The version is the SHA-256 of canonical JSON of exactly `data` (GP-59).
    let data = &only["data"];
    let canonical = router_catalog::canonical_json(data);
    assert_eq!(
        only["pricing_version"],
        router_catalog::sha256_hex(canonical.as_bytes())
    );
}

/// Issue 29: `/v1/models` is also Anthropic's model list (Claude Code's
/// gateway model discovery: `GET /v1/models?limit=1000`), and pages with
/// `limit`, `after_id` and `before_id`; the OpenAI fields stay (L-01).
#[tokio::test]
async fn models_list_is_also_anthropics_and_pages() {
    let r = TestRouter::start().await;
    let (k, _) = key(&r, &["inference"], json!({})).await;
    let (status, all) = get_json(&r, "/v1/models", Some(&k)).await;
    assert_eq!(status, 200);
    let every = ids(&all["data"]);
    assert!(every.len() >= 3, "{all}");
    assert_eq!(all["object"], "list");
    assert_eq!(all["has_more"], false);
    assert_eq!(all["first_id"], json!(every[0]));
    assert_eq!(all["last_id"], json!(every[every.len() - 1]));
    for model in all["data"].as_array().unwrap() {
        assert_eq!(model["object"], "model");
        assert_eq!(model["type"], "model");
        assert_eq!(model["display_name"], model["id"]);
        assert_eq!(model["lifecycle"], "active");
        assert_eq!(model["max_tokens"], model["max_output_tokens"]);
        assert_eq!(model["max_input_tokens"], model["context_length"]);
        assert!(model["created"].is_i64(), "{model}");
        let at = model["created_at"].as_str().unwrap();
        assert!(chrono::DateTime::parse_from_rfc3339(at).is_ok(), "{at}");
    }
    let (_, all_again) = get_json(&r, "/v1/models?limit=1000", Some(&k)).await;
    assert_eq!(ids(&all_again["data"]), every);
    assert_eq!(all_again["has_more"], false);

    let (_, first) = get_json(&r, "/v1/models?limit=2", Some(&k)).await;
    assert_eq!(ids(&first["data"]), every[..2]);
    assert_eq!(first["has_more"], true);
    assert_eq!(first["last_id"], json!(every[1]));
    // The version is still the hash of exactly the `data` returned (L-02).
    assert_ne!(first["pricing_version"], all["pricing_version"]);
    let next = format!("/v1/models?limit=2&after_id={}", every[1]);
    let (_, second) = get_json(&r, &next, Some(&k)).await;
    assert_eq!(ids(&second["data"]), every[2..every.len().min(4)]);
    let back = format!("/v1/models?limit=1&before_id={}", every[2]);
    let (_, back) = get_json(&r, &back, Some(&k)).await;
    assert_eq!(ids(&back["data"]), every[1..2]);
    assert_eq!(back["has_more"], true);

    for bad in [
        "/v1/models?limit=0",
        "/v1/models?limit=1001",
        "/v1/models?limit=x",
    ] {
        expect_error(get(&r, bad, Some(&k)).await, 400, "invalid_parameter").await;
    }
}

/// Issue 29: an Anthropic client (`anthropic-version` sent, as every
/// Anthropic SDK does) reads each model's `capabilities` in Anthropic's
/// `ModelCapabilities` shape, every key an object with `supported`, so a
/// strict `ModelInfo` parses; every other client keeps the router's flags
/// (GP-18). The same models, pages and envelope either way.
#[tokio::test]
async fn an_anthropic_client_reads_capabilities_in_anthropics_shape() {
    let r = TestRouter::start().await;
    let (k, _) = key(&r, &["inference"], json!({})).await;
    let (_, flags) = get_json(&r, "/v1/models", Some(&k)).await;
    let anthropic: Value = r
        .client
        .get(format!("{}/v1/models", r.base))
        .bearer_auth(&k)
        .header("anthropic-version", "2026-10-21")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ids(&anthropic["data"]), ids(&flags["data"]));
    assert_eq!(anthropic["has_more"], false);
    let supported = |v: &Value| v["supported"].as_bool().unwrap_or_else(|| panic!("{v}"));
    for (model, plain) in anthropic["data"]
        .as_array()
        .unwrap()
        .iter()
        .zip(flags["data"].as_array().unwrap())
    {
        let caps = &model["capabilities"];
        for key in [
            "batch",
            "citations",
            "code_execution",
            "context_management",
            "effort",
            "image_input",
            "pdf_input",
            "server_tools",
            "structured_outputs",
            "thinking",
        ] {
            supported(&caps[key]);
        }
        for level in ["low", "medium", "high", "max"] {
            supported(&caps["effort"][level]);
        }
        for tool in ["code_execution", "web_search"] {
            supported(&caps["server_tools"][tool]);
        }
        for kind in ["enabled", "adaptive", "disabled", "between_tools"] {
            supported(&caps["thinking"]["types"][kind]);
        }
        // Read from the router's own flags for the same model.
        let flag = |name: &str| plain["capabilities"][name].as_bool().unwrap();
        assert_eq!(supported(&caps["image_input"]), flag("vision"), "{model}");
        assert_eq!(supported(&caps["thinking"]), flag("thinking"), "{model}");
        assert_eq!(
            supported(&caps["structured_outputs"]),
            flag("response_format"),
            "{model}"
        );
        let native = plain["protocols"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p == "messages");
        assert_eq!(supported(&caps["context_management"]), native, "{model}");
        assert!(!supported(&caps["batch"]) && !supported(&caps["server_tools"]));
        assert!(plain["capabilities"]["tools"].is_boolean(), "{plain}");
    }
    // At least one model of the test catalog thinks, natively.
    assert!(
        anthropic["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["capabilities"]["thinking"]["types"]["adaptive"]["supported"] == true),
        "{anthropic}"
    );
}

/// L-04, A-01, A-02, A-06, A-17.
#[tokio::test]
async fn models_list_needs_an_inference_key() {
    let r = TestRouter::start().await;
    expect_error(get(&r, "/v1/models", None).await, 401, "invalid_api_key").await;
    let (usage, _) = key(&r, &["usage:read"], json!({})).await;
    expect_error(
        get(&r, "/v1/models", Some(&usage)).await,
        403,
        "insufficient_scope",
    )
    .await;
    let (inference, _) = key(&r, &["inference"], json!({})).await;
    let resp = r
        .client
        .get(format!("{}/v1/models", r.base))
        .header("x-api-key", &inference)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
}

/// L-05..L-08, GP-30.
#[tokio::test]
async fn supply_is_anonymous_and_filtered_like_routing() {
    let r = TestRouter::start().await;
    let (k, _) = key(
        &r,
        &["inference"],
        json!({"allowed_models": ["m-supply", "m-text"]}),
    )
    .await;
    let resp = get(&r, "/v1/models/supply?model=m-supply", Some(&k)).await;
    assert_eq!(resp.status(), 200);
    let text = resp.text().await.unwrap();
    assert_anonymous(&text);
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["object"], "list");
    assert_eq!(body["model"], "m-supply");
    let data = body["data"].as_array().unwrap();
    assert_eq!(data.len(), 2);
    assert_eq!(data[0]["supply"], "s1");
    assert_eq!(data[1]["supply"], "s2");
    // Cheapest first: quote 1 USD/MTok, a 50% discount on a 2 USD list price.
    assert_eq!(data[0]["input_usd_per_mtok"], json!(1));
    assert_eq!(data[0]["input_discount_percent"], json!(50.0));
    assert_eq!(data[1]["output_discount_percent"], json!(-50.0));
    assert_eq!(data[0]["zdr"], false);
    assert!(data[0]["capabilities"].is_array());
    // L-07: a floor excludes the route below it; zdr leaves nothing.
    let (_, floor) = get_json(
        &r,
        "/v1/models/supply?model=m-supply&min_discount_percent=10",
        Some(&k),
    )
    .await;
    assert_eq!(floor["data"].as_array().unwrap().len(), 1, "{floor}");
    let (status, zdr) = get_json(&r, "/v1/models/supply?model=m-supply&zdr=true", Some(&k)).await;
    assert_eq!((status, &zdr["data"]), (200, &json!([])));
    // L-06.
    for bad in [
        "/v1/models/supply",
        "/v1/models/supply?model=",
        "/v1/models/supply?model=m-supply&min_discount_percent=100",
        "/v1/models/supply?model=m-supply&min_discount_percent=abc",
        "/v1/models/supply?model=m-supply&zdr=maybe",
    ] {
        expect_error(get(&r, bad, Some(&k)).await, 400, "invalid_parameter").await;
    }
    // L-08, GP-46: unknown and hidden 404; not allowed 403.
    expect_error(
        get(&r, "/v1/models/supply?model=nope", Some(&k)).await,
        404,
        "model_not_found",
    )
    .await;
    expect_error(
        get(&r, "/v1/models/supply?model=m-hidden", Some(&k)).await,
        404,
        "model_not_found",
    )
    .await;
    expect_error(
        get(&r, "/v1/models/supply?model=m-claude", Some(&k)).await,
        403,
        "model_not_allowed",
    )
    .await;
    assert_eq!(r.mock.call_count(), 0);
}

/// L-09..L-19, GP-29, CF-28, A-10.
#[tokio::test]
async fn compare_estimates_exactly_from_catalog_prices() {
    let r = TestRouter::start().await;
    // A zero-balance account (L-18: no 402).
    let c = r.customer(0, &["usage:read"]).await;
    let k = c.key;
    let path = |q: &str| format!("/v1/models/compare?{q}");
    // L-13: 1 prompt token of vendor/model-x costs 0.4 nano-USD -> 0, for any count.
    let (status, body) = get_json(
        &r,
        &path("models=vendor/model-x&prompt_tokens=1&requests=1000000"),
        Some(&k),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"][0]["billed_nano_usd"], 0);
    assert_eq!(body["data"][0]["billed_usd"], json!(0));
    // 4 tokens: 1.6 nano-USD rounds to 2 per request, x10 = 20 (not 16).
    let (_, body) = get_json(
        &r,
        &path("models=vendor/model-x&prompt_tokens=4&requests=10"),
        Some(&k),
    )
    .await;
    assert_eq!(body["data"][0]["billed_nano_usd"], 20);
    // L-15, L-17, L-14: expensive then cheap (alias), then unknown and hidden.
    let resp = get(
        &r,
        &path(
            "models=m-claude,model-x-alias,nope,m-hidden&prompt_tokens=1000&completion_tokens=1000",
        ),
        Some(&k),
    )
    .await;
    assert_eq!(resp.headers()["cache-control"], "no-store", "L-19");
    let text = resp.text().await.unwrap();
    assert_anonymous(&text);
    let body: Value = serde_json::from_str(&text).unwrap();
    let order: Vec<&str> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["model"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["model-x-alias", "m-claude", "nope", "m-hidden"]);
    assert_eq!(body["data"][0]["id"], "vendor/model-x");
    assert_eq!(body["data"][0]["found"], true);
    // m-claude: 1000 * 1 USD/MTok + 1000 * 2 USD/MTok = 0.003 USD.
    assert_eq!(body["data"][1]["billed_nano_usd"], 3_000_000);
    assert_eq!(body["data"][1]["billed_usd"], json!(0.003));
    assert_eq!(body["data"][1]["suppliers"]["count"], 2);
    assert_eq!(body["data"][2]["found"], false);
    assert_eq!(body["data"][3]["found"], false, "hidden is not found");
    // L-09: dedupe, counts, empty segment.
    let (_, dup) = get_json(&r, &path("models=m-text,m-text"), Some(&k)).await;
    assert_eq!(dup["data"].as_array().unwrap().len(), 1);
    let eleven: Vec<String> = (0..11).map(|i| format!("x{i}")).collect();
    let ten = eleven[..10].join(",");
    assert_eq!(
        get(&r, &path(&format!("models={ten}")), Some(&k))
            .await
            .status(),
        200
    );
    for bad in [
        path(""),
        path(&format!("models={}", eleven.join(","))),
        path("models=a,,b"),
        path("models=m-text&prompt_tokens=-1"),
        path("models=m-text&prompt_tokens=10000001"),
        path("models=m-text&completion_tokens=1.5"),
        path("models=m-text&requests=0"),
        path("models=m-text&requests=9007199254740992"),
    ] {
        expect_error(get(&r, &bad, Some(&k)).await, 400, "invalid_parameter").await;
    }
    // L-11: the maximum count is accepted; L-12: a total past i64 is 400 on `requests`.
    let (status, _) = get_json(
        &r,
        &path("models=vendor/model-x&requests=9007199254740991"),
        Some(&k),
    )
    .await;
    assert_eq!(status, 200);
    let body = expect_error(
        get(
            &r,
            &path("models=m-text&prompt_tokens=10000000&requests=9007199254740991"),
            Some(&k),
        )
        .await,
        400,
        "invalid_parameter",
    )
    .await;
    assert_eq!(body["error"]["param"], "requests");
    // a disallowed model is found:false, not 403.
    let c2 = r.customer(0, &["usage:read"]).await;
    let limited = r.new_key(json!({"account_id": c2.account_id, "scopes": ["usage:read"], "allowed_models": ["m-text"]})).await;
    let limited = limited["key"].as_str().unwrap();
    let (status, body) = get_json(&r, &path("models=m-claude"), Some(limited)).await;
    assert_eq!((status, &body["data"][0]["found"]), (200, &json!(false)));
    // inference scope is not enough.
    let (inference, _) = key(&r, &["inference"], json!({})).await;
    expect_error(
        get(&r, &path("models=m-text"), Some(&inference)).await,
        403,
        "insufficient_scope",
    )
    .await;
    assert_eq!(r.mock.call_count(), 0, "L-18: no supplier call");
}

/// The compare arithmetic against an independent big-integer computation
/// (u128 with explicit half-up rounding), over a grid of token counts.
#[tokio::test]
async fn compare_arithmetic_matches_an_independent_computation() {
    let r = TestRouter::start().await;
    let c = r.customer(0, &["usage:read"]).await;
    // m-claude: 1e9 input, 2e9 output per MTok; vendor/model-x: 4e5, 0.
    let models = [
        ("m-claude", 1_000_000_000u128, 2_000_000_000u128),
        ("vendor/model-x", 400_000, 0),
    ];
    for (model, input, output) in models {
        for (p, q, n) in [
            (0u128, 0u128, 1u128),
            (1, 0, 7),
            (3, 5, 1_000_003),
            (9_999_999, 1, 3),
            (1_234_567, 7_654_321, 99),
        ] {
            let exact = p * input + q * output; // in nano-USD x 10^6
            let per_request = (exact + 500_000) / 1_000_000;
            let total = per_request * n;
            let (status, body) = get_json(
                &r,
                &format!("/v1/models/compare?models={model}&prompt_tokens={p}&completion_tokens={q}&requests={n}"),
                Some(&c.key),
            )
            .await;
            if total > i64::MAX as u128 {
                assert_eq!(status, 400);
                continue;
            }
            assert_eq!(status, 200, "{body}");
            assert_eq!(
                body["data"][0]["billed_nano_usd"].as_u64().map(u128::from),
                Some(total),
                "{model} {p} {q} {n}"
            );
        }
    }
}

/// L-31..L-40, A-13, GP-58, GP-71.
#[tokio::test]
async fn public_catalog_is_open_exact_and_revalidated() {
    let r = TestRouter::start().await;
    let resp = r
        .client
        .get(format!("{}/public/models", r.base))
        .header("authorization", "Bearer garbage")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "a stray Authorization is ignored");
    assert_eq!(
        resp.headers()["cache-control"],
        "public, max-age=0, must-revalidate"
    );
    let etag = resp.headers()["etag"].to_str().unwrap().to_owned();
    let text = resp.text().await.unwrap();
    assert_anonymous(&text);
    let body: Value = serde_json::from_str(&text).unwrap();
    let listed = ids(&body["models"]);
    assert!(listed.contains(&"vendor/model-x".to_owned()));
    assert!(
        !listed.contains(&"m-hidden".to_owned()),
        "L-31: hidden absent"
    );
    assert!(
        !listed.contains(&"m-off".to_owned()),
        "L-31: no enabled supply"
    );
    // Pollers get 304 with the same validators.
    let again = r
        .client
        .get(format!("{}/public/models", r.base))
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
    assert_eq!(again.headers()["etag"].to_str().unwrap(), etag);
    assert_eq!(
        again.headers()["cache-control"],
        "public, max-age=0, must-revalidate"
    );
    // L-32: only the literal `true` filters.
    let (_, zdr) = get_json(&r, "/public/models?zdr=true", None).await;
    assert_eq!(zdr, json!({"models": []}));
    for other in ["1", "TRUE", "yes"] {
        let (status, full) = get_json(&r, &format!("/public/models?zdr={other}"), None).await;
        assert_eq!(
            (status, ids(&full["models"])),
            (200, listed.clone()),
            "zdr={other}"
        );
    }
    // L-34: slashes, %2F and aliases, canonical ID back.
    for path in ["vendor/model-x", "vendor%2Fmodel-x", "model-x-alias"] {
        let resp = get(&r, &format!("/public/models/{path}"), None).await;
        assert_eq!(resp.status(), 200, "{path}");
        assert_eq!(
            resp.headers()["cache-control"],
            "public, max-age=0, must-revalidate",
            "L-37"
        );
        let one: Value = resp.json().await.unwrap();
        assert_eq!(one["id"], "vendor/model-x", "{path}");
    }
    // L-35, L-36, L-40: exact only; 404 {detail}.
    for path in [
        "Vendor/Model-X",
        "%20vendor/model-x",
        "model-x",
        "vendor/model-x/",
        "m-hidden",
        "nope",
        "m-off",
        "vendor/model-x?zdr=true",
    ] {
        let (status, body) = get_json(&r, &format!("/public/models/{path}"), None).await;
        assert_eq!(status, 404, "{path}");
        assert!(body["detail"].is_string(), "{path}: {body}");
        assert_eq!(body.as_object().unwrap().len(), 1, "{body}");
    }
}

/// L-38, L-39, GP-19: logical models with capabilities and public tariffs.
#[tokio::test]
async fn catalog_models_show_video_capabilities_and_tariffs() {
    let r = TestRouter::start().await;
    let resp = get(&r, "/catalog/models", None).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["cache-control"],
        "public, max-age=0, must-revalidate"
    );
    assert!(resp.headers().contains_key("etag"));
    let text = resp.text().await.unwrap();
    assert_anonymous(&text);
    let body: Value = serde_json::from_str(&text).unwrap();
    let models = body["models"].as_array().unwrap();
    let video = models.iter().find(|m| m["id"] == "m-video").unwrap();
    assert_eq!(video["modality"], "video");
    assert!(
        video["protocols"]
            .as_array()
            .unwrap()
            .contains(&json!("videos"))
    );
    let caps = &video["capabilities"];
    assert_eq!(caps["resolutions"], json!(["720p", "1080p"]));
    assert_eq!(caps["durations"], json!([5, 10]));
    assert_eq!(caps["aspectRatios"], json!(["16:9", "9:16"]));
    assert_eq!(
        caps["references"],
        json!({"images": 2, "videos": 1, "audios": 1})
    );
    assert_eq!(caps["audioVideos"], 1);
    assert_eq!(caps["total"], 3);
    let rates = &video["publicPricing"]["rates"];
    // Every resolution offered has a rate in both lists (L-39).
    for resolution in caps["resolutions"].as_array().unwrap() {
        let rate = &rates[resolution.as_str().unwrap()];
        assert!(
            rate["minimumAmount"].is_number() && rate["secondRate"].is_number(),
            "{rate}"
        );
    }
    assert_eq!(
        rates["720p"],
        json!({"minimumAmount": 0.1, "secondRate": 0.02})
    );
    let image = models.iter().find(|m| m["id"] == "m-img").unwrap();
    assert_eq!(image["publicPricing"]["perImage"], json!(0.04));
    assert!(models.iter().all(|m| m["id"] != "m-hidden"));
}

/// Issue 17 item 2, L-25..L-29: a reload records a release and its changes.
#[tokio::test]
async fn reload_records_releases_and_the_feed_shows_changes() {
    let r = TestRouter::start().await;
    let (usage, _) = key(&r, &["usage:read"], json!({})).await;
    let (inference, _) = key(&r, &["inference"], json!({})).await;
    let (_, before) = get_json(&r, "/v1/models", Some(&inference)).await;
    let first = before["release"].as_i64().unwrap();
    assert!(
        before["pricing_updated_at"].is_null(),
        "no price has changed yet"
    );
    // Initial observations: `updated` with null previous prices (L-28).
    let (status, feed) = get_json(
        &r,
        "/v1/pricing/changes?since=2000-01-01T00:00:00Z",
        Some(&usage),
    )
    .await;
    assert_eq!(status, 200, "{feed}");
    assert_eq!(feed["source"], "configured_catalog");
    assert!(feed["pricing_checked_at"].is_null());
    assert!(feed["next_cursor"].is_null(), "L-30");
    let initial = feed["data"].as_array().unwrap();
    let m_text = initial.iter().find(|e| e["model_id"] == "m-text").unwrap();
    assert_eq!(m_text["kind"], "updated");
    assert!(m_text["previous"].is_null());
    assert_eq!(m_text["model"]["id"], "m-text");
    assert!(initial.iter().all(|e| e["model_id"] != "m-hidden"));

    // An invalid file is refused with file and line; the old one serves.
    r.write_catalog("[[models]]\nid = \"x\"\npricing = \"fixed\"\ncolour = 1\n");
    let (status, body) = r.reload_catalog().await;
    assert_eq!(status, 400, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(".toml, line 4: "), "{message}");
    assert!(message.contains("colour"), "{message}");
    let (_, still) = get_json(&r, "/v1/models", Some(&inference)).await;
    assert_eq!(still["release"], first);

    // Reprice m-text, drop m-gpt-only: one release, two changes.
    let text = CATALOG.replace(
        "rates = { input = 1_000_000_000, output = 2_000_000_000 }\nmax_output_tokens = 1000",
        "rates = { input = 3_000_000_000, output = 2_000_000_000 }\nmax_output_tokens = 1000",
    );
    let gpt_start = text.find("# GPT-like").unwrap();
    let gpt_end = text.find("# One model per route protocol").unwrap();
    let text = format!("{}{}", &text[..gpt_start], &text[gpt_end..]);
    r.write_catalog(&text);
    let (status, reloaded) = r.reload_catalog().await;
    assert_eq!(status, 200, "{reloaded}");
    assert_eq!(reloaded["release"], first + 1);
    assert_eq!(reloaded["changed"], 2);
    assert_eq!(reloaded["pricing_version"].as_str().unwrap().len(), 64);
    let (_, admin) = r.admin(Method::GET, "/admin/catalog", None).await;
    assert_eq!(admin["release"], first + 1);
    let (_, after) = get_json(&r, "/v1/models", Some(&inference)).await;
    assert_eq!(after["release"], first + 1);
    assert!(after["pricing_updated_at"].is_string());
    assert!(!ids(&after["data"]).contains(&"m-gpt-only".to_owned()));
    let (_, feed) = get_json(
        &r,
        "/v1/pricing/changes?since=2000-01-01T00:00:00Z",
        Some(&usage),
    )
    .await;
    let data = feed["data"].as_array().unwrap();
    let m_text: Vec<&Value> = data.iter().filter(|e| e["model_id"] == "m-text").collect();
    assert_eq!(m_text.len(), 1, "L-27: the latest change only");
    assert_eq!(m_text[0]["previous"]["input_usd_per_mtok"], json!(1));
    assert_eq!(m_text[0]["current"]["input_usd_per_mtok"], json!(3));
    let removed = data.iter().find(|e| e["model_id"] == "m-gpt-only").unwrap();
    assert_eq!(removed["kind"], "removed");
    assert!(
        removed["model"].is_null() && removed["current"].is_null(),
        "L-29"
    );
    // The inference path serves the new catalog: the removed model is gone.
    expect_error(
        r.chat(&inference, &hello("m-gpt-only")).await,
        404,
        "model_not_found",
    )
    .await;
    // The changes are last: a `since` at their instant includes them (L-21).
    let at = m_text[0]["changed_at"].as_str().unwrap();
    let (_, exact) = get_json(
        &r,
        &format!("/v1/pricing/changes?since={}", at.replace('+', "%2B")),
        Some(&usage),
    )
    .await;
    let exact_ids: HashSet<&str> = exact["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["model_id"].as_str().unwrap())
        .collect();
    assert!(
        exact_ids.contains("m-text") && exact_ids.contains("m-gpt-only"),
        "{exact}"
    );
    let (_, future) = get_json(
        &r,
        "/v1/pricing/changes?since=2999-01-01T00:00:00%2B02:00",
        Some(&usage),
    )
    .await;
    assert_eq!(future["data"], json!([]));
}

/// L-21..L-26, R-06, GP-28: pages neither overlap nor skip, freeze their
/// release, and bind their cursor.
#[tokio::test]
async fn pricing_pages_are_frozen_and_bound_to_their_query() {
    let r = TestRouter::start().await;
    let (usage, usage_id) = key(&r, &["usage:read"], json!({})).await;
    let since = "since=2000-01-01T00:00:00Z";
    let (status, full) = get_json(
        &r,
        &format!("/v1/pricing/changes?{since}&limit=100"),
        Some(&usage),
    )
    .await;
    assert_eq!(status, 200);
    let full = full["data"].as_array().unwrap().clone();
    assert!(full.len() > 3);
    // Page 1 of size 2, then change the catalog, then the rest.
    let (_, page) = get_json(
        &r,
        &format!("/v1/pricing/changes?{since}&limit=2"),
        Some(&usage),
    )
    .await;
    let mut pages: Vec<Value> = page["data"].as_array().unwrap().clone();
    let mut cursor = page["next_cursor"].as_str().unwrap().to_owned();
    r.write_catalog(&CATALOG.replace("\"m-text\"", "\"m-text-renamed\""));
    assert_eq!(r.reload_catalog().await.0, 200);
    // L-24: another since, another key, garbage, oversized.
    let (other, _) = key(&r, &["usage:read"], json!({})).await;
    for (query, k) in [
        (
            format!("since=2001-01-01T00:00:00Z&limit=2&cursor={cursor}"),
            usage.as_str(),
        ),
        (format!("{since}&limit=2&cursor={cursor}"), other.as_str()),
        (format!("{since}&limit=2&cursor=garbage"), usage.as_str()),
        (
            format!("{since}&limit=2&cursor={}", "a".repeat(2049)),
            usage.as_str(),
        ),
    ] {
        let body = expect_error(
            get(&r, &format!("/v1/pricing/changes?{query}"), Some(k)).await,
            400,
            "invalid_parameter",
        )
        .await;
        assert_eq!(body["error"]["param"], "cursor", "{query}");
    }
    loop {
        let (status, page) = get_json(
            &r,
            &format!("/v1/pricing/changes?{since}&limit=2&cursor={cursor}"),
            Some(&usage),
        )
        .await;
        assert_eq!(status, 200, "{page}");
        let rows = page["data"].as_array().unwrap();
        assert!(rows.len() <= 2);
        pages.extend(rows.iter().cloned());
        match page["next_cursor"].as_str() {
            Some(next) => cursor = next.to_owned(),
            None => break,
        }
    }
    assert_eq!(pages, full, "L-25, L-26: frozen, no overlap, no skip");
    // A new first page sees the new release.
    let (_, fresh) = get_json(&r, &format!("/v1/pricing/changes?{since}"), Some(&usage)).await;
    assert!(
        fresh["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["model_id"] == "m-text-renamed")
    );
    // L-24: after the key's policy changes, its cursor is refused.
    let (_, page) = get_json(
        &r,
        &format!("/v1/pricing/changes?{since}&limit=1"),
        Some(&usage),
    )
    .await;
    let cursor = page["next_cursor"].as_str().unwrap().to_owned();
    let (status, _) = r
        .admin(
            Method::PATCH,
            &format!("/admin/api-keys/{usage_id}"),
            Some(json!({"allowed_models": ["m-claude"]})),
        )
        .await;
    assert_eq!(status, 200);
    let body = expect_error(
        get(
            &r,
            &format!("/v1/pricing/changes?{since}&limit=1&cursor={cursor}"),
            Some(&usage),
        )
        .await,
        400,
        "invalid_parameter",
    )
    .await;
    assert_eq!(body["error"]["param"], "cursor");
    // L-27 with A-18: only the allowed model now.
    let (_, only) = get_json(&r, &format!("/v1/pricing/changes?{since}"), Some(&usage)).await;
    let ids: Vec<&str> = only["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["model_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["m-claude"]);
    // L-21, L-22.
    for bad in [
        "",
        "since=2025-01-01T00:00:00",
        "since=2025-01-01",
        "since=2025-01-01T00:00:00Z&limit=0",
        "since=2025-01-01T00:00:00Z&limit=101",
    ] {
        let resp = get(&r, &format!("/v1/pricing/changes?{bad}"), Some(&usage)).await;
        expect_error(resp, 400, "invalid_parameter").await;
    }
    let resp = get(
        &r,
        "/v1/pricing/changes?since=2025-01-01T00:00:00%2B02:00",
        Some(&usage),
    )
    .await;
    assert_eq!(resp.headers()["cache-control"], "no-store", "L-30");
    assert_eq!(resp.status(), 200);
}

/// Issue 17 item 2: another instance picks a new release up by NOTIFY.
#[tokio::test]
async fn a_second_router_converges_on_a_reloaded_release() {
    let r = TestRouter::start().await;
    let second = r.second_router().await;
    let (k, _) = key(&r, &["inference"], json!({})).await;
    r.write_catalog(&CATALOG.replace("\"m-text\"", "\"m-text-v2\""));
    let (status, reloaded) = r.reload_catalog().await;
    assert_eq!(status, 200, "{reloaded}");
    let release = reloaded["release"].as_i64().unwrap();
    // Poll until the NOTIFY lands (no timed assertion: a bound on polls).
    let mut seen = None;
    for _ in 0..200 {
        let url = format!("{}/v1/models", second.base);
        let resp = send_with_key(&second.client, reqwest::Method::GET, url, &k).await;
        let body: Value = resp.json().await.unwrap();
        if body["release"] == release {
            seen = Some(body);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let seen = seen.expect("the second router adopted the release");
    assert!(ids(&seen["data"]).contains(&"m-text-v2".to_owned()));
    let (_, first) = get_json(&r, "/v1/models", Some(&k)).await;
    assert_eq!(first["pricing_version"], seen["pricing_version"]);
}

/// GP-46: a hidden model answers inference like an unknown one.
#[tokio::test]
async fn hidden_models_are_not_found_for_inference() {
    let (r, c) = TestRouter::start_rich().await;
    expect_error(
        r.chat(&c.key, &hello("m-hidden")).await,
        404,
        "model_not_found",
    )
    .await;
    assert_eq!(r.mock.call_count(), 0);
}

/// A small deterministic generator (no timing, no global state).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below
    }
}

/// A catalog of fixed-price models `(id, input price)`, one route each.
fn generated_catalog(models: &[(String, i64)]) -> String {
    let mut text =
        String::from("[[suppliers]]\nid = \"acme-secret-supplier\"\nbase_url = \"{BASE}\"\n");
    for (id, price) in models {
        text.push_str(&format!(
            "\n[[models]]\nid = \"{id}\"\npricing = \"fixed\"\nrates = {{ input = {price}, output = 1 }}\n\
             \n[[routes]]\nid = \"r-{id}\"\nmodel = \"{id}\"\nsupplier = \"acme-secret-supplier\"\n\
             upstream_model = \"up\"\nprotocol = \"chat\"\ninternal_cost = {{ input = 1, output = 1 }}\n"
        ));
    }
    text
}

async fn all_pages(r: &TestRouter, key: &str, limit: u64, between: impl AsyncFn()) -> Vec<Value> {
    let since = "since=2000-01-01T00:00:00Z";
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    let mut first = true;
    loop {
        let query = match &cursor {
            None => format!("{since}&limit={limit}"),
            Some(c) => format!("{since}&limit={limit}&cursor={c}"),
        };
        let (status, page) = get_json(r, &format!("/v1/pricing/changes?{query}"), Some(key)).await;
        assert_eq!(status, 200, "{page}");
        out.extend(page["data"].as_array().unwrap().iter().cloned());
        if first {
            // A reload between pages changes nothing (L-25).
            between().await;
            first = false;
        }
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return out,
        }
    }
}

/// Issue 17: for random catalogs, change histories and page sizes, the
/// concatenated pages equal one full page, and a reload between pages
/// changes nothing (L-25, L-26, GP-28).
#[tokio::test]
async fn pagination_property_over_random_histories() {
    let r = TestRouter::start().await;
    let (usage, _) = key(&r, &["usage:read"], json!({})).await;
    let mut rng = Lcg(0x0005_eed1);
    let mut next_id = 0;
    for case in 0..4 {
        // A random history of 1..4 releases over a changing model set.
        let mut models: Vec<(String, i64)> = Vec::new();
        for _ in 0..=rng.next(4) {
            models.retain(|_| rng.next(4) != 0);
            for m in &mut models {
                if rng.next(3) == 0 {
                    m.1 += 1 + rng.next(1000) as i64;
                }
            }
            for _ in 0..rng.next(5) {
                next_id += 1;
                models.push((format!("g{next_id}"), 1 + rng.next(1000) as i64));
            }
            r.write_catalog(&generated_catalog(&models));
            let (status, body) = r.reload_catalog().await;
            assert_eq!(status, 200, "{body}");
        }
        let (_, full) = get_json(
            &r,
            "/v1/pricing/changes?since=2000-01-01T00:00:00Z&limit=100",
            Some(&usage),
        )
        .await;
        let full = full["data"].as_array().unwrap().clone();
        let ids: Vec<&str> = full
            .iter()
            .map(|e| e["model_id"].as_str().unwrap())
            .collect();
        let unique: HashSet<&str> = ids.iter().copied().collect();
        assert_eq!(unique.len(), ids.len(), "one entry per model: {ids:?}");
        let limit = 1 + rng.next(5);
        let changed = models.clone();
        let pages = all_pages(&r, &usage, limit, async || {
            // Reprice everything and add a model: a new release mid-walk.
            let mut next: Vec<(String, i64)> =
                changed.iter().map(|(id, p)| (id.clone(), p + 7)).collect();
            next.push((format!("mid{case}"), 5));
            r.write_catalog(&generated_catalog(&next));
            assert_eq!(r.reload_catalog().await.0, 200);
        })
        .await;
        assert_eq!(pages, full, "case {case}, limit {limit}");
        // Leave the catalog as the history left it for the next case.
        r.write_catalog(&generated_catalog(&models));
        assert_eq!(r.reload_catalog().await.0, 200);
    }
}

/// Issue 17: reloading 20 times under a loop of requests: no error, and no
/// reply mixes two catalogs.
#[tokio::test]
async fn reload_under_load_never_mixes_catalogs() {
    let r = std::sync::Arc::new(TestRouter::start().await);
    let c = r.rich_customer().await;
    // Catalog A prices m-text input at 1 USD/MTok; B at 3 and adds a marker model.
    let a = CATALOG.to_owned();
    let b = CATALOG
        .replace(
            "rates = { input = 1_000_000_000, output = 2_000_000_000 }\nmax_output_tokens = 1000",
            "rates = { input = 3_000_000_000, output = 2_000_000_000 }\nmax_output_tokens = 1000",
        )
        .replace("id = \"m-off\"", "id = \"m-marker-b\"")
        .replace("model = \"m-off\"", "model = \"m-marker-b\"");
    assert_ne!(a, b);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut workers = Vec::new();
    for _ in 0..3 {
        let (r, key, stop) = (r.clone(), c.key.clone(), stop.clone());
        workers.push(tokio::spawn(async move {
            let mut seen = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let (status, body) = get_json(&r, "/v1/models", Some(&key)).await;
                assert_eq!(status, 200, "{body}");
                let data = body["data"].as_array().unwrap();
                let marker = data.iter().any(|m| m["id"] == "m-marker-b");
                let price = &data.iter().find(|m| m["id"] == "m-text").unwrap()["pricing"]["input_usd_per_mtok"];
                assert_eq!(price, &json!(if marker { 3 } else { 1 }), "a mixed catalog: {body}");
                let version = router_catalog::sha256_hex(
                    router_catalog::canonical_json(&body["data"]).as_bytes(),
                );
                assert_eq!(body["pricing_version"], version);
                let resp = r.chat(&key, &hello("m-text")).await;
                assert_eq!(resp.status(), 200);
                seen += 1;
            }
            seen
        }));
    }
    for i in 0..20 {
        r.write_catalog(if i % 2 == 0 { &b } else { &a });
        let (status, body) = r.reload_catalog().await;
        assert_eq!(status, 200, "{body}");
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    for worker in workers {
        assert!(worker.await.unwrap() > 0);
    }
}

/// A-15, CF-25: a signed-in session opens compare and pricing changes, and
/// a session's cursor is not valid with a key (nor the reverse).
#[tokio::test]
async fn sessions_read_compare_and_pricing_changes_with_their_own_cursors() {
    let r = TestRouter::start().await;
    let c = r.customer(0, &["usage:read"]).await;
    let cookie = r.session_cookie(&c.account_id).await;
    let with_session = |path: &str| {
        r.client
            .get(format!("{}{path}", r.base))
            .header("cookie", cookie.clone())
            .send()
    };
    let resp = with_session("/v1/models/compare?models=m-text,m-claude")
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["cache-control"], "no-store");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["data"][0]["found"], true);
    let since = "since=2000-01-01T00:00:00Z&limit=1";
    let page: Value = with_session(&format!("/v1/pricing/changes?{since}"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let cursor = page["next_cursor"].as_str().unwrap().to_owned();
    let next = with_session(&format!("/v1/pricing/changes?{since}&cursor={cursor}"))
        .await
        .unwrap();
    assert_eq!(next.status(), 200);
    // The same account's key cannot continue the session's walk.
    let body = expect_error(
        get(
            &r,
            &format!("/v1/pricing/changes?{since}&cursor={cursor}"),
            Some(&c.key),
        )
        .await,
        400,
        "invalid_parameter",
    )
    .await;
    assert_eq!(body["error"]["param"], "cursor");
    // A session is not a credential for /v1/models.
    let resp = with_session("/v1/models").await.unwrap();
    assert_eq!(resp.status(), 401);
}
