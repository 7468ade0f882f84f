//! The scope matrix, generated from the route table (`routes.rs`): every
//! route × every kind of credential, the expected answer derived from the
//! row's auth rule (A-01..A-17), its path check and whether its feature has
//! landed; then unknown paths (404) and wrong methods (405 with `Allow`,
//! GP-68). One router for the whole matrix; every mismatch is collected and
//! reported at once.

use crate::harness::*;
use router_canonical::ErrorCode;
use router_core::product_codes;
use router_core::store::Scope;
use router_server::reply::Envelope;
use router_server::routes::{AuthRule, ParamRule, ROUTES, Route};
use serde_json::{Value, json};

/// One way a request can present itself.
#[derive(Debug, Clone)]
enum Credential {
    None,
    /// `Authorization: Basic abc`.
    Malformed,
    /// A well-formed key that was never issued.
    Unknown,
    Expired,
    Deleted,
    /// A valid key carrying exactly these scopes (Bearer).
    Scopes(Vec<Scope>),
    /// A valid key with every scope, sent as `x-api-key`.
    AllScopesXApiKey,
    /// Bearer and `x-api-key` name different valid keys (A-03, GP-35).
    Mismatch,
    /// The operator token, as Bearer.
    Operator,
    /// A live browser session's cookie with `Origin` of the router.
    SessionSameOrigin,
    /// The cookie with another site's `Origin` (A-16, GP-36).
    SessionCrossOrigin,
    /// The cookie and neither `Origin` nor `Referer`.
    SessionNoOrigin,
}

impl Credential {
    fn is_session(&self) -> bool {
        matches!(
            self,
            Credential::SessionSameOrigin
                | Credential::SessionCrossOrigin
                | Credential::SessionNoOrigin
        )
    }
}

/// Stands for a fresh session cookie in a credential's headers: each cell
/// gets its own session, since one cell (sign-out) ends the one it uses.
const SESSION_COOKIE: &str = "{session}";

/// What the route table says the answer is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expected {
    /// The guard refuses, or the route answers, with this code.
    Error(ErrorCode),
    /// The guard lets the request through to a landed handler: anything but
    /// a guard's answer (an empty body gets its own 400 or 404).
    Handled,
}

fn expected(route: &Route, credential: &Credential) -> Expected {
    let through = || Expected::Handled;
    let key_rule = |scope: Option<Scope>| match credential {
        Credential::Scopes(scopes) if scope.is_none_or(|s| scopes.contains(&s)) => through(),
        Credential::AllScopesXApiKey => through(),
        Credential::Scopes(_) => Expected::Error(product_codes::INSUFFICIENT_SCOPE),
        _ => Expected::Error(ErrorCode::InvalidApiKey),
    };
    // A session passes on its own; its mutation needs the router's origin.
    let session_rule = || match credential {
        Credential::SessionSameOrigin => through(),
        _ if route.method.as_str() == "GET" => through(),
        _ => Expected::Error(product_codes::CROSS_ORIGIN_FORBIDDEN),
    };
    match route.auth {
        AuthRule::Public => through(),
        // Only the same-origin session credential sends our `Origin`.
        AuthRule::PublicSameOrigin => match credential {
            Credential::SessionSameOrigin => through(),
            _ => Expected::Error(product_codes::CROSS_ORIGIN_FORBIDDEN),
        },
        // The test router has no scraper token: the operator's alone.
        AuthRule::Admin | AuthRule::Metrics => match credential {
            Credential::Operator => through(),
            _ => Expected::Error(ErrorCode::InvalidApiKey),
        },
        // A session is never a credential here.
        AuthRule::ApiKey { scope } => key_rule(scope),
        AuthRule::ApiKeyOrSession { .. } if credential.is_session() => session_rule(),
        AuthRule::ApiKeyOrSession { scope } => key_rule(Some(scope)),
        AuthRule::Session if credential.is_session() => session_rule(),
        AuthRule::Session => match credential {
            Credential::None => Expected::Error(product_codes::AUTHENTICATION_REQUIRED),
            _ => Expected::Error(product_codes::SESSION_REQUIRED),
        },
    }
}

/// The codes only a guard answers with.
const GUARD_CODES: [ErrorCode; 5] = [
    ErrorCode::InvalidApiKey,
    product_codes::AUTHENTICATION_REQUIRED,
    product_codes::INSUFFICIENT_SCOPE,
    product_codes::SESSION_REQUIRED,
    product_codes::CROSS_ORIGIN_FORBIDDEN,
];

/// The route's path with its parameter filled in: valid (`bad = false`) or
/// malformed for the row's path check.
fn concrete_path(route: &Route, bad: bool) -> String {
    let id = if bad {
        "not-a-uuid".to_owned()
    } else {
        uuid::Uuid::new_v4().to_string()
    };
    route
        .path
        .replace("{*model_id}", "vendor/model-x")
        .replace("{platform}", if bad { "email2" } else { "slack" })
        .replace("{channel_id}", &id)
        .replace("{video_id}", &id)
        .replace("{id}", &id)
        .replace("{slug}", "some-slug")
}

struct Keys {
    /// The account of `all`, whose sessions the session cells use.
    account_id: String,
    by_scope: Vec<(Scope, String)>,
    none: String,
    all: String,
    expired: String,
    deleted: String,
}

async fn issue_keys(r: &TestRouter) -> Keys {
    let names: Vec<&str> = Scope::ALL.iter().map(|s| s.as_str()).collect();
    let all = r.customer(0, &names).await;
    let mut by_scope = Vec::new();
    for scope in Scope::ALL {
        by_scope.push((scope, r.customer(0, &[scope.as_str()]).await.key));
    }
    let none = r.customer(0, &[]).await.key;
    let key = |extra: Value| {
        let mut body = json!({"account_id": all.account_id, "scopes": names});
        if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
            b.extend(e.clone());
        }
        r.admin(reqwest::Method::POST, "/admin/api-keys", Some(body))
    };
    let expired = key(json!({"expires_at": 1})).await.1;
    let deleted = key(json!({})).await.1;
    let status = r
        .admin_delete(&format!(
            "/admin/api-keys/{}",
            deleted["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(status, 204);
    Keys {
        account_id: all.account_id.clone(),
        by_scope,
        none,
        all: all.key,
        expired: expired["key"].as_str().unwrap().to_owned(),
        deleted: deleted["key"].as_str().unwrap().to_owned(),
    }
}

fn credentials(keys: &Keys, base: &str) -> Vec<(Credential, Vec<(&'static str, String)>)> {
    let bearer = |k: &str| vec![("authorization", format!("Bearer {k}"))];
    let mut out = vec![
        (Credential::None, vec![]),
        (
            Credential::Malformed,
            vec![("authorization", "Basic abc".to_owned())],
        ),
        (
            Credential::Unknown,
            bearer("sk-rt-000000000000000000000000000000000000000000000000"),
        ),
        (Credential::Expired, bearer(&keys.expired)),
        (Credential::Deleted, bearer(&keys.deleted)),
        (Credential::Scopes(vec![]), bearer(&keys.none)),
        (Credential::Scopes(Scope::ALL.to_vec()), bearer(&keys.all)),
        (
            Credential::AllScopesXApiKey,
            vec![("x-api-key", keys.all.clone())],
        ),
        (Credential::Mismatch, {
            let mut h = bearer(&keys.all);
            h.push(("x-api-key", keys.none.clone()));
            h
        }),
        (Credential::Operator, bearer(ADMIN_TOKEN)),
        (
            Credential::SessionSameOrigin,
            vec![
                ("cookie", SESSION_COOKIE.to_owned()),
                ("origin", base.to_owned()),
            ],
        ),
        (
            Credential::SessionCrossOrigin,
            vec![
                ("cookie", SESSION_COOKIE.to_owned()),
                ("origin", "https://evil.example".to_owned()),
            ],
        ),
        (
            Credential::SessionNoOrigin,
            vec![("cookie", SESSION_COOKIE.to_owned())],
        ),
    ];
    for (scope, key) in &keys.by_scope {
        out.push((Credential::Scopes(vec![*scope]), bearer(key)));
    }
    out
}

/// Compare one answer with the expectation; `None` when it matches.
async fn check(route: &Route, resp: reqwest::Response, want: Expected) -> Option<String> {
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    let request_id = headers.get("x-request-id").and_then(|v| v.to_str().ok());
    if request_id.is_none() {
        return Some(format!("no x-request-id ({status} {body})"));
    }
    let code = match route.envelope {
        Envelope::OpenAi | Envelope::Video => body["error"]["code"].as_str().map(str::to_owned),
        _ => None,
    };
    match want {
        Expected::Handled => {
            let guarded = GUARD_CODES
                .iter()
                .any(|c| code.as_deref() == Some(c.as_str()));
            (guarded || matches!(status, 401 | 403 | 405))
                .then(|| format!("expected the handler, got {status} {body}"))
        }
        Expected::Error(want) => {
            let envelope_ok = match route.envelope {
                Envelope::OpenAi => code.as_deref() == Some(want.as_str()),
                Envelope::Video => {
                    code.as_deref() == Some(want.as_str())
                        && body["error"]["requestId"].as_str() == request_id
                }
                Envelope::Messages => {
                    body["error"]["type"] == want.messages_type()
                        && headers.get("request-id").and_then(|v| v.to_str().ok()) == request_id
                }
                Envelope::Public => body["detail"].is_string() && body.get("error").is_none(),
            };
            (status != want.http_status() || !envelope_ok).then(|| {
                format!(
                    "expected {} {want}, got {status} {body}",
                    want.http_status()
                )
            })
        }
    }
}

fn method(route: &Route) -> reqwest::Method {
    reqwest::Method::from_bytes(route.method.as_str().as_bytes()).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_route_by_every_credential_answers_as_its_row_says() {
    let r = TestRouter::start().await;
    let keys = issue_keys(&r).await;
    let credentials = credentials(&keys, &r.base);
    let mut cells = 0;
    let mut mismatches = Vec::new();
    for route in &ROUTES {
        for (credential, headers) in &credentials {
            let mut request = r.client.request(
                method(route),
                format!("{}{}", r.base, concrete_path(route, false)),
            );
            for (name, value) in headers {
                let value = match value.as_str() {
                    SESSION_COOKIE => r.session_cookie(&keys.account_id).await,
                    _ => value.clone(),
                };
                request = request.header(*name, value);
            }
            let want = expected(route, credential);
            let resp = request.send().await.unwrap();
            cells += 1;
            if let Some(problem) = check(route, resp, want).await {
                mismatches.push(format!(
                    "{} {} × {credential:?}: {problem}",
                    route.method, route.path
                ));
            }
        }
        // The path check comes after the guard: a malformed ID is a 404 for
        // a caller the rule lets through (A-22, GP-72).
        if route.param != ParamRule::None {
            let all = Credential::Scopes(Scope::ALL.to_vec());
            let want = match expected(route, &all) {
                Expected::Handled => Expected::Error(match route.param {
                    ParamRule::ChannelId => product_codes::CHANNEL_NOT_FOUND,
                    _ => ErrorCode::NotFound,
                }),
                refused => refused,
            };
            let resp = r
                .client
                .request(
                    method(route),
                    format!("{}{}", r.base, concrete_path(route, true)),
                )
                .bearer_auth(&keys.all)
                .send()
                .await
                .unwrap();
            cells += 1;
            if let Some(problem) = check(route, resp, want).await {
                mismatches.push(format!(
                    "{} {} × malformed parameter: {problem}",
                    route.method, route.path
                ));
            }
        }
    }
    assert_eq!(r.mock.call_count(), 0, "no route reached a supplier");
    assert!(
        mismatches.is_empty(),
        "{} of {cells} cells differ from the route table:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_paths_404_and_wrong_methods_405_with_allow() {
    let r = TestRouter::start().await;
    // P-18, M-35, N-05: paths the spec does not have.
    for (m, path) in [
        (reqwest::Method::POST, "/v1/files"),
        (reqwest::Method::GET, "/v1/files"),
        (reqwest::Method::POST, "/v1/audio/transcriptions"),
        (reqwest::Method::POST, "/v1/webhooks"),
        (reqwest::Method::POST, "/v1/images/edits"),
        (reqwest::Method::GET, "/public/models/"),
    ] {
        let resp = r
            .client
            .request(m, format!("{}{path}", r.base))
            .send()
            .await
            .unwrap();
        expect_error(resp, 404, "not_found").await;
    }
    let mut paths: Vec<(&str, Vec<&str>)> = Vec::new();
    for route in &ROUTES {
        match paths.iter_mut().find(|(p, _)| *p == route.path) {
            Some((_, methods)) => methods.push(route.method.as_str()),
            None => paths.push((route.path, vec![route.method.as_str()])),
        }
    }
    for (path, methods) in paths {
        let route = ROUTES.iter().find(|r| r.path == path).unwrap();
        let resp = r
            .client
            .put(format!("{}{}", r.base, concrete_path(route, false)))
            .bearer_auth(ADMIN_TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 405, "PUT {path}");
        assert_eq!(
            resp.headers()["allow"],
            methods.join(", ").as_str(),
            "{path}"
        );
    }
}
