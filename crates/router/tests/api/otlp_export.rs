//! OTLP export (issue 30, item 9): with `ROUTER_OTLP_ENDPOINT` the real
//! binary sends each sampled request's spans (request, reservation, each
//! attempt, settlement) to a collector, in the client's trace, the attempt
//! spans under the ids their suppliers were sent; without it nothing is
//! sent and traces the router starts are not sampled.

use crate::harness::*;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use router_mock_supplier::Script;
use router_store::test_support::TestDatabase;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TRACE_ID: &str = "0af7651916cd43dd8448eb211c80319c";
const CLIENT_SPAN: &str = "b7ad6b7169203331";

/// A collector: every POST body to `/v1/traces`, decoded.
#[derive(Clone, Default)]
struct Collector(Arc<Mutex<Vec<ExportTraceServiceRequest>>>);

impl Collector {
    async fn start(self) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let collector = self.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(
                        move |req: http::Request<hyper::body::Incoming>| {
                            let collector = collector.clone();
                            async move {
                                assert_eq!(req.uri().path(), "/v1/traces");
                                assert_eq!(req.headers()["content-type"], "application/x-protobuf");
                                let body = req.into_body().collect().await.unwrap().to_bytes();
                                let export = ExportTraceServiceRequest::decode(body).unwrap();
                                collector.0.lock().unwrap().push(export);
                                let mut reply = http::Response::new(Full::new(Bytes::new()));
                                reply.headers_mut().insert(
                                    "content-type",
                                    http::HeaderValue::from_static("application/x-protobuf"),
                                );
                                Ok::<_, std::convert::Infallible>(reply)
                            }
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        base
    }

    fn spans(&self) -> Vec<Span> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .flat_map(|export| export.resource_spans.iter())
            .flat_map(|resource| resource.scope_spans.iter())
            .flat_map(|scope| scope.spans.iter().cloned())
            .collect()
    }

    fn service_names(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .flat_map(|export| export.resource_spans.iter())
            .filter_map(|r| r.resource.as_ref())
            .flat_map(|r| r.attributes.iter())
            .filter(|a| a.key == "service.name")
            .filter_map(|a| match a.value.as_ref()?.value.as_ref()? {
                AnyValue::StringValue(s) => Some(s.clone()),
                _ => None,
            })
            .collect()
    }

    /// Waits until `n` spans of `trace` arrived (batches leave within a second).
    async fn wait_for(&self, trace: &str, n: usize) -> Vec<Span> {
        let start = Instant::now();
        loop {
            let spans: Vec<Span> = self
                .spans()
                .into_iter()
                .filter(|s| hex(&s.trace_id) == trace)
                .collect();
            if spans.len() >= n || start.elapsed() > Duration::from_secs(15) {
                return spans;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes.iter().find(|a| a.key == key).and_then(|a| {
        match a.value.as_ref()?.value.as_ref()? {
            AnyValue::StringValue(s) => Some(s.clone()),
            AnyValue::IntValue(n) => Some(n.to_string()),
            _ => None,
        }
    })
}

async fn customer(client: &reqwest::Client, base: &str) -> String {
    funded_key_over_http(client, base, "otlp@example.com", 1_000_000_000_000).await
}

#[tokio::test(flavor = "multi_thread")]
async fn spans_of_a_request_reach_the_collector_in_the_clients_trace() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let collector = Collector::default();
    let endpoint = collector.clone().start().await;
    let mock = mock_answering("exported").await;
    // The primary route fails once with a 500, then answers.
    mock.enqueue_for("up-text-primary", Script::status(500));
    let db = TestDatabase::new().await;
    let router = spawn_router_process(
        db.url(),
        &mock.base_url(),
        &[("ROUTER_OTLP_ENDPOINT", endpoint.as_str())],
    )
    .await;
    let client = reqwest::Client::new();
    let key = customer(&client, &router.base).await;
    let resp = hello_with_headers(
        &client,
        &router.base,
        &key,
        "m-text",
        &[("traceparent", &format!("00-{TRACE_ID}-{CLIENT_SPAN}-01"))],
    )
    .await;
    assert_eq!(resp.status(), 200);
    resp.text().await.unwrap();

    // request, reservation, two attempts, settlement.
    let spans = collector.wait_for(TRACE_ID, 5).await;
    let named = |name: &str| -> Vec<&Span> { spans.iter().filter(|s| s.name == name).collect() };
    let request = named("POST /v1/chat/completions");
    assert_eq!(request.len(), 1, "{spans:#?}");
    let request = request[0];
    assert_eq!(
        hex(&request.parent_span_id),
        CLIENT_SPAN,
        "a child of the client's span"
    );
    assert_eq!(
        attribute(request, "http.response.status_code").as_deref(),
        Some("200")
    );
    assert_eq!(
        attribute(request, "router.model").as_deref(),
        Some("m-text")
    );
    assert!(attribute(request, "router.charged_nano_usd").is_some());
    let children = ["reservation", "attempt", "settlement"];
    for name in children {
        for span in named(name) {
            assert_eq!(
                span.parent_span_id, request.span_id,
                "{name} is the request's child"
            );
            assert!(
                span.start_time_unix_nano >= request.start_time_unix_nano,
                "{name}"
            );
            assert!(
                span.end_time_unix_nano <= request.end_time_unix_nano + 1_000_000,
                "{name}"
            );
        }
    }
    assert_eq!(named("reservation").len(), 1);
    assert_eq!(named("settlement").len(), 1);
    let attempts = named("attempt");
    assert_eq!(attempts.len(), 2, "{spans:#?}");
    // Each attempt span is the parent the supplier was sent.
    let sent: Vec<String> = mock
        .calls()
        .iter()
        .map(|c| {
            c.header("traceparent")
                .unwrap()
                .split('-')
                .nth(2)
                .unwrap()
                .to_owned()
        })
        .collect();
    let mut exported: Vec<String> = attempts.iter().map(|s| hex(&s.span_id)).collect();
    let mut sent_sorted = sent.clone();
    exported.sort();
    sent_sorted.sort();
    assert_eq!(exported, sent_sorted);
    let failed = attempts
        .iter()
        .find(|s| attribute(s, "router.outcome").as_deref() == Some("status"))
        .expect("the failed attempt");
    assert_eq!(
        attribute(failed, "http.response.status_code").as_deref(),
        Some("500")
    );
    assert!(
        attribute(failed, "router.supplier_request_id")
            .unwrap()
            .starts_with("req_mock_")
    );
    assert!(collector.service_names().iter().all(|s| s == "router"));

    // A request without a traceparent starts a sampled trace of the
    // router's own, exported as a root.
    let resp = client
        .post(format!("{}/v1/chat/completions", router.base))
        .bearer_auth(&key)
        .json(&hello("m-text"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    resp.text().await.unwrap();
    let sent = mock
        .calls()
        .last()
        .unwrap()
        .header("traceparent")
        .unwrap()
        .to_owned();
    assert!(sent.ends_with("-01"), "{sent}");
    let own_trace = sent.split('-').nth(1).unwrap().to_owned();
    let spans = collector.wait_for(&own_trace, 4).await;
    let root = spans
        .iter()
        .find(|s| s.name == "POST /v1/chat/completions")
        .unwrap_or_else(|| panic!("{spans:#?}"));
    assert!(root.parent_span_id.is_empty() || root.parent_span_id == [0; 8]);

    // A client's unsampled trace is followed but not exported.
    let unsampled = "1af7651916cd43dd8448eb211c80319c";
    let resp = hello_with_headers(
        &client,
        &router.base,
        &key,
        "m-text",
        &[("traceparent", &format!("00-{unsampled}-{CLIENT_SPAN}-00"))],
    )
    .await;
    assert_eq!(resp.status(), 200);
    resp.text().await.unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let leaked: Vec<Span> = collector
        .spans()
        .into_iter()
        .filter(|s| hex(&s.trace_id) == unsampled)
        .collect();
    assert!(leaked.is_empty(), "{leaked:#?}");
    let sent = mock
        .calls()
        .last()
        .unwrap()
        .header("traceparent")
        .unwrap()
        .to_owned();
    assert!(sent.starts_with(&format!("00-{unsampled}-")) && sent.ends_with("-00"));
    mock.shutdown();
}

/// A collector that does not answer costs the requests nothing: they are
/// answered, and the start-up refuses a bad endpoint naming it.
#[tokio::test(flavor = "multi_thread")]
async fn an_absent_collector_never_holds_a_request_and_a_bad_endpoint_stops_start_up() {
    let mock = mock_answering("fine").await;
    let db = TestDatabase::new().await;
    // A port nothing listens on.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let router = spawn_router_process(
        db.url(),
        &mock.base_url(),
        &[("ROUTER_OTLP_ENDPOINT", &closed)],
    )
    .await;
    let client = reqwest::Client::new();
    let key = customer(&client, &router.base).await;
    let started = Instant::now();
    for _ in 0..5 {
        let resp = client
            .post(format!("{}/v1/chat/completions", router.base))
            .bearer_auth(&key)
            .json(&hello("m-text"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        resp.text().await.unwrap();
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );

    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_router"))
        .arg("serve")
        .env_remove("ROUTER_LOG")
        .env("DATABASE_URL", db.url())
        .env("ROUTER_OTLP_ENDPOINT", "collector:4318")
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("ROUTER_OTLP_ENDPOINT"), "{stderr}");
    mock.shutdown();
}
