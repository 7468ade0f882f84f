//! A gateway's routing fields (`zdr`, `min_discount_percent`) are no
//! member of the protocol: `parse_request` treats them as any unknown
//! top-level member (accepted and dropped), and only a gateway that asks
//! for them (`parse_request_with`) reads and validates them.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a panic is the failure report"
)]

use router_canonical::ClientCodec;
use router_chat::ChatClient;
use router_wire_testkit::RoutingOptions;
use serde_json::json;

fn body(extra: serde_json::Value) -> Vec<u8> {
    let mut body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    serde_json::to_vec(&body).unwrap()
}

#[test]
fn a_library_caller_ignores_a_gateways_fields_whatever_their_value() {
    let with = body(json!({"zdr": "yes", "min_discount_percent": 250}));
    let (request, _) = ChatClient::default().parse_request(&(), &with).unwrap();
    let (without, _) = ChatClient::default()
        .parse_request(&(), &body(json!({})))
        .unwrap();
    assert_eq!(request, without);
}

#[test]
fn a_gateway_reads_and_validates_them() {
    let mut routing = RoutingOptions::default();
    ChatClient::default()
        .parse_request_with(&(), &body(json!({"zdr": true})), &mut routing)
        .unwrap();
    assert!(routing.zdr);
    let error = ChatClient::default()
        .parse_request_with(
            &(),
            &body(json!({"zdr": "yes"})),
            &mut RoutingOptions::default(),
        )
        .unwrap_err();
    assert_eq!(error.param.as_deref(), Some("zdr"));
    let error = ChatClient::default()
        .parse_request_with(
            &(),
            &body(json!({"min_discount_percent": 250})),
            &mut RoutingOptions::default(),
        )
        .unwrap_err();
    assert_eq!(error.param.as_deref(), Some("min_discount_percent"));
}

/// A gateway's image rule: web image URLs to public hosts only.
struct PublicImages;

impl router_canonical::BodyExtensions for PublicImages {
    fn take(
        &mut self,
        _: &mut serde_json::Map<String, serde_json::Value>,
    ) -> Result<(), router_canonical::ApiError> {
        Ok(())
    }
    fn check_image_url(&self, param: &str, url: &str) -> Result<(), router_canonical::ApiError> {
        router_canonical::parse::public_http_image_url(param, url)
    }
}

/// Which hosts an image URL may name is the gateway's rule (it forwards
/// the URL to a supplier, which fetches it), not the protocol's: a library
/// caller gets every web URL, and a gateway judges each through
/// `BodyExtensions::check_image_url`, with the part's path (issue 31).
#[test]
fn an_image_urls_host_is_judged_by_the_gateway_not_the_codec() {
    let private = "http://169.254.169.254/latest/meta-data";
    let image = |url: &str| {
        serde_json::to_vec(
            &json!({"model": "m", "messages": [{"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": url}},
            {"type": "input_image", "image_url": url}]}]}),
        )
        .unwrap()
    };
    assert!(
        ChatClient::default()
            .parse_request(&(), &image(private))
            .is_ok()
    );
    let error = ChatClient::default()
        .parse_request_with(&(), &image(private), &mut PublicImages)
        .unwrap_err();
    assert_eq!(
        error.param.as_deref(),
        Some("messages[0].content[1].image_url.url")
    );
    assert!(
        ChatClient::default()
            .parse_request_with(&(), &image("https://img.example/a.png"), &mut PublicImages)
            .is_ok()
    );
}
