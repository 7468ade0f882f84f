//! What every test binary of the mock needs: a mock on a loopback port, an
//! HTTP client, and the check that a body was cut by the connection.

// Each test binary uses its own subset of these.
#![allow(dead_code)]

use std::io::ErrorKind;

use router_mock_supplier::MockSupplier;

pub async fn start() -> MockSupplier {
    MockSupplier::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap()
}

/// reqwest is built without a TLS provider and refuses to build a client
/// until one is installed, even for plain http.
pub fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// Asserts the body failed because the connection ended mid-body, not
/// because of a timeout or a parse error.
pub fn assert_connection_cut(error: &reqwest::Error) {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = source {
        if let Some(io) = current.downcast_ref::<std::io::Error>() {
            assert_eq!(io.kind(), ErrorKind::UnexpectedEof, "{error:?}");
            return;
        }
        source = current.source();
    }
    panic!("not a connection error: {error:?}");
}
