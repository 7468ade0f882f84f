//! A refusal names the field it refuses, in the caller's terms
//! (`ApiError::field`, rendered by each client codec's `named_in`).

use router_canonical::{Field, Message, Request, Role, SupplierCodec, SupplierTarget};
use router_gemini::GeminiSupplier;

#[test]
fn a_conversation_without_turns_names_the_conversation() {
    let request = Request {
        model: "m".into(),
        messages: vec![Message::text(Role::System, "Be brief.")],
        ..Request::default()
    };
    let error = GeminiSupplier::default()
        .encode_request(&request, &SupplierTarget::new("up"))
        .expect_err("carried a request without turns");
    assert_eq!(error.code.as_str(), "unsupported_conversion");
    assert_eq!(error.field, Some(Field::Messages));
}
