//! Vertex AI's authentication (issue 32, item 1) with the real binary: a
//! Google service account's key file (`GOOGLE_APPLICATION_CREDENTIALS`)
//! exchanged for an OAuth token at its `token_uri`, or the metadata
//! server's token (`GCE_METADATA_HOST`); the token is cached, sent as the
//! bearer of every Gemini call, and a key the endpoint refuses fails the
//! request with nothing charged.

use crate::harness::*;
use router_mock_supplier::{MOCK_GOOGLE_CLIENT_EMAIL, MOCK_GOOGLE_PRIVATE_KEY, MockSupplier};
use router_store::test_support::TestDatabase;
use serde_json::json;

/// A model served only by a Vertex route whose supplier authenticates with
/// `auth` (a TOML inline table).
fn vertex_catalog(mock: &str, auth: &str) -> String {
    format!(
        r#"
[[suppliers]]
id = "vertex"
base_url = "{mock}/v1/projects/p/locations/us-central1/publishers/google"
auth = {auth}

[[models]]
id = "m-vertex"
pricing = "fixed"
rates = {{ input = 1_000_000_000, output = 2_000_000_000 }}

[[routes]]
id = "vertex-route"
model = "m-vertex"
supplier = "vertex"
upstream_model = "gemini-2.5-flash"
protocol = "gemini"
capabilities = ["streaming"]
internal_cost = {{ input = 1, output = 1 }}
"#
    )
}

/// A service account key file whose `token_uri` is the mock's.
fn key_file(mock: &str, private_key: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("router-sa-{}.json", uuid::Uuid::new_v4()));
    let key = json!({
        "type": "service_account",
        "project_id": "mock-project",
        "private_key_id": "0123456789abcdef",
        "private_key": private_key,
        "client_email": MOCK_GOOGLE_CLIENT_EMAIL,
        "token_uri": format!("{mock}/oauth2/token"),
    });
    std::fs::write(&path, key.to_string()).unwrap();
    path
}

async fn chat_at(client: &reqwest::Client, base: &str, key: &str) -> reqwest::Response {
    client
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth(key)
        .json(&hello("m-vertex"))
        .send()
        .await
        .unwrap()
}

async fn start_mock() -> MockSupplier {
    let _ = rustls::crypto::ring::default_provider().install_default();
    MockSupplier::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap()
}

fn mock_root(mock: &MockSupplier) -> String {
    // The mock's base URL ends in `/v1`; the token and Vertex paths are
    // rooted at its origin.
    mock.base_url().trim_end_matches("/v1").to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_service_account_token_is_fetched_once_and_sent_as_the_bearer() {
    let mock = start_mock().await;
    let root = mock_root(&mock);
    let db = TestDatabase::new().await;
    let key = key_file(&root, MOCK_GOOGLE_PRIVATE_KEY);
    let catalog = vertex_catalog(&root, r#"{ type = "google_service_account" }"#);
    let router = spawn_router_process_with_catalog(
        db.url(),
        &catalog,
        &[("GOOGLE_APPLICATION_CREDENTIALS", key.to_str().unwrap())],
    )
    .await;
    let client = reqwest::Client::new();
    let api_key = funded_key_over_http(
        &client,
        &router.base,
        "vertex@example.com",
        1_000_000_000_000,
    )
    .await;
    for _ in 0..3 {
        let resp = chat_at(&client, &router.base, &api_key).await;
        assert_answered(resp, "m-vertex").await;
    }
    // One exchange, cached for the next calls.
    assert_eq!(mock.google_tokens_issued(), (1, 0));
    let calls = mock.calls();
    assert_eq!(calls.len(), 3);
    for call in &calls {
        assert!(
            call.path
                .ends_with("/publishers/google/models/gemini-2.5-flash:generateContent"),
            "{}",
            call.path
        );
        assert_eq!(
            call.header("authorization"),
            Some("Bearer mock-google-token-1")
        );
        assert_eq!(call.header("x-goog-api-key"), None);
    }
    let _ = std::fs::remove_file(key);
    mock.shutdown();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_metadata_servers_token_is_sent_as_the_bearer() {
    let mock = start_mock().await;
    let root = mock_root(&mock);
    let db = TestDatabase::new().await;
    let catalog = vertex_catalog(&root, r#"{ type = "google_metadata" }"#);
    let host = root.trim_start_matches("http://").to_owned();
    let router =
        spawn_router_process_with_catalog(db.url(), &catalog, &[("GCE_METADATA_HOST", &host)])
            .await;
    let client = reqwest::Client::new();
    let api_key =
        funded_key_over_http(&client, &router.base, "gce@example.com", 1_000_000_000_000).await;
    let resp = chat_at(&client, &router.base, &api_key).await;
    assert_answered(resp, "m-vertex").await;
    assert_eq!(mock.google_tokens_issued(), (0, 1));
    assert_eq!(
        mock.calls()[0].header("authorization"),
        Some("Bearer mock-metadata-token-1")
    );
    mock.shutdown();
}

/// A key file signed by another key: the endpoint refuses the assertion,
/// the supplier is never called, the request fails and costs nothing.
#[tokio::test(flavor = "multi_thread")]
async fn a_key_the_token_endpoint_refuses_fails_the_request_uncharged() {
    let mock = start_mock().await;
    let root = mock_root(&mock);
    let db = TestDatabase::new().await;
    let other = std::process::Command::new("openssl")
        .args([
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
        ])
        .output()
        .unwrap();
    assert!(other.status.success());
    let key = key_file(&root, &String::from_utf8(other.stdout).unwrap());
    let catalog = vertex_catalog(
        &root,
        r#"{ type = "google_service_account", credentials_env = "VERTEX_KEY_FILE" }"#,
    );
    let router = spawn_router_process_with_catalog(
        db.url(),
        &catalog,
        &[("VERTEX_KEY_FILE", key.to_str().unwrap())],
    )
    .await;
    let client = reqwest::Client::new();
    let api_key = funded_key_over_http(
        &client,
        &router.base,
        "refused@example.com",
        1_000_000_000_000,
    )
    .await;
    let resp = chat_at(&client, &router.base, &api_key).await;
    let status = resp.status().as_u16();
    let id = request_id(&resp);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert!(status >= 500, "{status} {body}");
    assert!(
        !body.to_string().contains("oauth2"),
        "no token endpoint detail leaks: {body}"
    );
    assert_eq!(mock.google_tokens_issued(), (0, 0));
    assert_eq!(
        mock.call_count(),
        0,
        "the supplier is never called without a token"
    );
    let record = db
        .database()
        .get_request(id.parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.status, "failed", "{record:?}");
    assert_eq!(record.charged_nano, None);
    let _ = std::fs::remove_file(key);
    mock.shutdown();
}
