//! Documentation search, `GET /v1/docs` (section K), and the manual pages
//! its `url`s point to.

use crate::harness::{TestRouter, expect_error};
use serde_json::{Value, json};

async fn docs(r: &TestRouter, key: &str, query: &str) -> reqwest::Response {
    r.get(&format!("/v1/docs{query}"), key).await
}

/// A 200 with its envelope checked (K-02, P-05); returns the body.
async fn ok(resp: reqwest::Response) -> Value {
    let status = resp.status().as_u16();
    assert!(resp.headers().contains_key("x-request-id"), "P-05");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["object"], "list", "{body}");
    assert!(
        body["query"].is_null() || body["query"].is_string(),
        "{body}"
    );
    let data = body["data"].as_array().expect("data is an array");
    for item in data {
        for field in ["id", "title", "category", "url"] {
            assert!(item[field].is_string(), "{field} of {item}");
        }
    }
    body
}

fn ids(body: &Value) -> Vec<String> {
    body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect()
}

/// A key with no scope on an account with no credit.
async fn no_scope_key(r: &TestRouter) -> String {
    r.customer(0, &[]).await.key
}

#[tokio::test(flavor = "multi_thread")]
async fn any_valid_key_may_search_and_nothing_else_may() {
    // K-01, A-12: no scope, zero balance → 200; by Bearer or x-api-key.
    let r = TestRouter::start().await;
    let key = no_scope_key(&r).await;
    ok(docs(&r, &key, "?q=models").await).await;
    let resp = r
        .client
        .get(format!("{}/v1/docs", r.base))
        .header("x-api-key", &key)
        .send()
        .await
        .unwrap();
    ok(resp).await;
    // No credential, an unknown key → 401 invalid_api_key (K-12 envelope).
    let resp = r.get_plain("/v1/docs").await;
    expect_error(resp, 401, "invalid_api_key").await;
    let resp = docs(&r, "rk-unknown-key", "").await;
    expect_error(resp, 401, "invalid_api_key").await;
    assert_eq!(r.mock.call_count(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_q_the_ordered_sections_have_no_body() {
    // K-03, K-07 (CF-17), K-10 (GP-56).
    let r = TestRouter::start().await;
    let key = no_scope_key(&r).await;
    let first = ok(docs(&r, &key, "").await).await;
    assert!(first["query"].is_null());
    let data = first["data"].as_array().unwrap();
    assert!(
        data.len() >= 60,
        "the whole manual: {} sections",
        data.len()
    );
    for item in data {
        assert!(item.get("body").is_none(), "{item}");
        assert_eq!(item.as_object().unwrap().len(), 4, "{item}");
    }
    assert_eq!(data[0]["id"], "getting-started");
    // Stable order, and `limit` (valid or not) or a blank `q` change nothing.
    for query in [
        "",
        "?limit=1",
        "?limit=99",
        "?limit=abc",
        "?limit=0",
        "?q=",
        "?q=&limit=1",
        "?q=%20%20",
        "?q=+&limit=x",
    ] {
        let body = ok(docs(&r, &key, query).await).await;
        assert_eq!(body, first, "{query}");
    }
    // Every id is distinct.
    let mut all = ids(&first);
    all.sort();
    all.dedup();
    assert_eq!(all.len(), data.len());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_query_returns_at_most_limit_matching_sections_with_bodies() {
    // K-04, K-06.
    let r = TestRouter::start().await;
    let key = no_scope_key(&r).await;
    let body = ok(docs(&r, &key, "?q=models").await).await;
    assert_eq!(body["query"], "models");
    let data = body["data"].as_array().unwrap();
    assert_eq!(
        data.len(),
        4,
        "default limit 4, and the manual has more: {body}"
    );
    for item in data {
        let text = format!("{} {}", item["title"], item["body"]).to_lowercase();
        assert!(item["body"].is_string(), "{item}");
        assert!(text.contains("model"), "a match: {item}");
    }
    let ten = ok(docs(&r, &key, "?q=models&limit=10").await).await;
    assert_eq!(ten["data"].as_array().unwrap().len(), 10);
    // Best first: the first four of ten are the default four.
    assert_eq!(ids(&ten)[..4], ids(&body)[..]);
    let one = ok(docs(&r, &key, "?q=models&limit=1").await).await;
    assert_eq!(ids(&one), ids(&body)[..1]);
    // `query` echoes `q` exactly, decoded.
    let spaced = ok(docs(&r, &key, "?q=%20Streaming+usage%21").await).await;
    assert_eq!(spaced["query"], " Streaming usage!");
    assert!(!ids(&spaced).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn search_stems_ranks_by_relevance_and_finds_codes() {
    // GP-56: case-insensitive terms over titles and paragraphs, by relevance.
    let r = TestRouter::start().await;
    let key = no_scope_key(&r).await;
    let plural = ok(docs(&r, &key, "?q=MODELS&limit=10").await).await;
    let singular = ok(docs(&r, &key, "?q=model&limit=10").await).await;
    assert_eq!(ids(&plural), ids(&singular), "stemmed and case-folded");
    let code = ok(docs(&r, &key, "?q=insufficient_scope&limit=10").await).await;
    let found = ids(&code);
    assert!(found.contains(&"scopes".to_owned()), "{found:?}");
    let top = ok(docs(&r, &key, "?q=streaming+events&limit=3").await).await;
    let streaming = ids(&top).iter().filter(|id| id.contains("stream")).count();
    assert!(
        ids(&top)[0].contains("stream") && streaming >= 2,
        "{:?}",
        ids(&top)
    );
    let count = ok(docs(&r, &key, "?q=count+tokens&limit=1").await).await;
    assert_eq!(ids(&count), ["count-tokens"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn q_is_at_most_500_characters() {
    // K-05, Q-18: characters, not bytes.
    let r = TestRouter::start().await;
    let key = no_scope_key(&r).await;
    let at_limit = "é".repeat(500);
    let body = ok(docs(&r, &key, &format!("?q={at_limit}")).await).await;
    assert_eq!(body["query"], at_limit.as_str());
    let resp = docs(&r, &key, &format!("?q={at_limit}e")).await;
    let error = expect_error(resp, 400, "invalid_parameter").await;
    assert_eq!(error["error"]["param"], "q");
    assert_eq!(error["error"]["type"], "invalid_request_error");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_limit_with_q_is_refused() {
    // K-06, Q-18.
    let r = TestRouter::start().await;
    let key = no_scope_key(&r).await;
    for limit in ["0", "11", "abc", "1.5", "-1", ""] {
        let resp = docs(&r, &key, &format!("?q=models&limit={limit}")).await;
        let error = expect_error(resp, 400, "invalid_parameter").await;
        assert_eq!(error["error"]["param"], "limit", "{limit}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn no_match_is_an_empty_list() {
    // K-08.
    let r = TestRouter::start().await;
    let key = no_scope_key(&r).await;
    for q in ["xyzzyplugh", "the+of+and"] {
        let body = ok(docs(&r, &key, &format!("?q={q}")).await).await;
        assert_eq!(body["data"], json!([]), "{q}");
        assert!(body["query"].is_string());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_url_is_absolute_and_serves_its_page() {
    // K-09: absolute, under the public base URL (the harness's default:
    // the listen address), and each page is served from the binary.
    let r = TestRouter::start().await;
    let key = no_scope_key(&r).await;
    let body = ok(docs(&r, &key, "").await).await;
    let mut pages = std::collections::HashMap::new();
    for item in body["data"].as_array().unwrap() {
        let url = reqwest::Url::parse(item["url"].as_str().unwrap()).unwrap();
        assert!(url.scheme() == "http" && url.host_str().is_some(), "{url}");
        assert!(item["url"].as_str().unwrap().starts_with(&r.base));
        assert_eq!(url.fragment(), item["id"].as_str());
        let mut page = url.clone();
        page.set_fragment(None);
        if !pages.contains_key(page.as_str()) {
            let resp = r.client.get(page.clone()).send().await.unwrap();
            assert_eq!(resp.status(), 200, "{page}");
            assert!(resp.headers().contains_key("x-request-id"));
            assert_eq!(
                resp.headers()["content-type"],
                "text/markdown; charset=utf-8"
            );
            pages.insert(page.to_string(), resp.text().await.unwrap());
        }
        let title = item["title"].as_str().unwrap();
        assert!(pages[page_key(&url).as_str()].contains(title), "{title}");
    }
    assert_eq!(pages.len(), router_docs::PAGES.len());
    let resp = r.get_plain("/docs/guide/no-such-page").await;
    expect_error(resp, 404, "not_found").await;
}

fn page_key(url: &reqwest::Url) -> String {
    let mut page = url.clone();
    page.set_fragment(None);
    page.to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_key_ip_policy_still_applies() {
    // K-11, CF-27: the harness connects from 127.0.0.1.
    let r = TestRouter::start().await;
    let customer = r.customer(0, &[]).await;
    let created = r.new_key(json!({"account_id": customer.account_id, "scopes": [], "ip_allowlist": ["10.0.0.0/8"]})).await;
    let outside = created["key"].as_str().unwrap();
    for query in ["", "?q=models"] {
        expect_error(docs(&r, outside, query).await, 403, "ip_not_allowed").await;
    }
    let created = r.new_key(json!({"account_id": customer.account_id, "scopes": [], "ip_allowlist": ["127.0.0.0/8"]})).await;
    ok(docs(&r, created["key"].as_str().unwrap(), "?q=models").await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_openapi_document_is_served_without_a_credential() {
    // R-01, GP-60, P-05.
    let r = TestRouter::start().await;
    let resp = r.get_plain("/openapi.json").await;
    assert_eq!(resp.status(), 200);
    assert!(resp.headers().contains_key("x-request-id"));
    assert_eq!(resp.headers()["content-type"], "application/json");
    let doc: Value = resp.json().await.unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["version"], "0.1.0");
    assert!(doc["paths"]["/v1/docs"]["get"].is_object());
}
