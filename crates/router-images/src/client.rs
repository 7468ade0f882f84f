//! The client side: the OpenAI Images generation request the gateway
//! accepts, and its reply.
//!
//! The request is the OpenAI Images one, narrowed by the spec:
//! `{model, prompt, n?: 1, size?: "auto", quality?: "auto",
//! response_format?: "b64_json", output_format?: "png", user?}`. Any other
//! value of those, an edit (`image`, `mask`), streaming (`stream`,
//! `partial_images`, which the spec does not have) or an unknown member is a
//! 400 `invalid_parameter` naming the member. `null` counts as absent, as
//! the OpenAI SDKs send it for an unset optional.

use base64::Engine;
use router_canonical::openai_error::to_json_bytes;
use router_canonical::parse::{json_object, required_text};
use router_canonical::{ApiError, ImageRequest, NanoUsd};
use serde::Serialize;
use serde_json::{Map, Value};

/// The longest prompt accepted, in characters (the OpenAI Images limit of
/// its GPT image models).
pub const MAX_PROMPT_CHARS: usize = 32_000;

/// Members that take exactly one value: the value is the only one allowed.
const FIXED: [&str; 5] = ["n", "size", "quality", "response_format", "output_format"];

/// The one allowed value of a fixed member.
fn allowed(name: &str) -> Value {
    match name {
        "n" => Value::from(1),
        "size" | "quality" => Value::from("auto"),
        "response_format" => Value::from("b64_json"),
        _ => Value::from("png"),
    }
}

/// Validate a client body into a canonical [`ImageRequest`].
pub fn parse_request(body: &[u8]) -> Result<ImageRequest, ApiError> {
    let object = json_object(body)?;
    check_members(&object)?;
    let model = required_text(&object, "model")?;
    let prompt = required_text(&object, "prompt")?;
    if prompt.chars().count() > MAX_PROMPT_CHARS {
        return Err(ApiError::invalid(
            "prompt",
            format!("`prompt` is longer than {MAX_PROMPT_CHARS} characters."),
        ));
    }
    let user = match object.get("user") {
        None | Some(Value::Null) => None,
        Some(Value::String(user)) => Some(user.clone()),
        Some(_) => return Err(ApiError::invalid("user", "`user` must be a string.")),
    };
    Ok(ImageRequest {
        model,
        prompt,
        user,
    })
}

fn check_members(object: &Map<String, Value>) -> Result<(), ApiError> {
    for (name, value) in object {
        match name.as_str() {
            "model" | "prompt" | "user" => {}
            "image" | "mask" => {
                return Err(ApiError::invalid(
                    name.as_str(),
                    format!("`{name}` is an image edit; only generation is available (N-05)."),
                ));
            }
            "stream" | "partial_images" if value.is_null() || value == &Value::Bool(false) => {}
            "stream" | "partial_images" => {
                return Err(ApiError::invalid(
                    name.as_str(),
                    format!(
                        "`{name}`: streaming partial images is not available; one complete PNG is returned."
                    ),
                ));
            }
            fixed if FIXED.contains(&fixed) => {
                let only = allowed(fixed);
                if !value.is_null() && value != &only {
                    return Err(ApiError::invalid(
                        fixed,
                        format!(
                            "`{fixed}` may only be {only} (one PNG of automatic size and quality)."
                        ),
                    ));
                }
            }
            other => {
                return Err(ApiError::invalid(
                    other,
                    format!("Unknown parameter `{other}`."),
                ));
            }
        }
    }
    Ok(())
}

/// The receipt of a settled image: what was charged for which request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Receipt<'a> {
    /// The request the image was generated for.
    pub request_id: &'a str,
    /// What was charged for it.
    pub charged: NanoUsd,
}

#[derive(Serialize)]
struct ImagesReply<'a> {
    created: i64,
    data: [ImageData; 1],
    receipt: ReceiptJson<'a>,
}

#[derive(Serialize)]
struct ImageData {
    b64_json: String,
}

#[derive(Serialize)]
struct ReceiptJson<'a> {
    request_id: &'a str,
    charged_usd: Value,
    status: &'static str,
}

/// The JSON reply for one validated PNG: `{created, data: [{b64_json}],
/// receipt: {request_id, charged_usd, status: "settled"}}`.
pub fn encode_response(created: i64, png: &[u8], receipt: &Receipt<'_>) -> Vec<u8> {
    to_json_bytes(&ImagesReply {
        created,
        data: [ImageData {
            b64_json: base64::engine::general_purpose::STANDARD.encode(png),
        }],
        receipt: ReceiptJson {
            request_id: receipt.request_id,
            charged_usd: receipt.charged.to_usd_json(),
            status: "settled",
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param_of(body: &str) -> Option<String> {
        parse_request(body.as_bytes()).unwrap_err().param
    }

    #[test]
    fn the_spec_request_and_its_defaults_are_accepted() {
        let full = r#"{"model":"m","prompt":"a cat","n":1,"size":"auto","quality":"auto",
            "response_format":"b64_json","output_format":"png","user":"u-1","stream":false}"#;
        let request = parse_request(full.as_bytes()).unwrap();
        assert_eq!(request.model, "m");
        assert_eq!(request.user.as_deref(), Some("u-1"));
        let nulls = r#"{"model":"m","prompt":"p","n":null,"size":null}"#;
        assert!(parse_request(nulls.as_bytes()).is_ok());
    }

    /// Every refused value names its member.
    #[test]
    fn other_values_edits_and_streaming_are_named() {
        let base = r#""model":"m","prompt":"p""#;
        for (extra, param) in [
            (r#""n":2"#, "n"),
            (r#""size":"1024x1024""#, "size"),
            (r#""quality":"high""#, "quality"),
            (r#""response_format":"url""#, "response_format"),
            (r#""output_format":"jpeg""#, "output_format"),
            (r#""image":"aGk=""#, "image"),
            (r#""mask":"aGk=""#, "mask"),
            (r#""stream":true"#, "stream"),
            (r#""partial_images":2"#, "partial_images"),
            (r#""style":"vivid""#, "style"),
            (r#""user":5"#, "user"),
        ] {
            let body = format!("{{{base},{extra}}}");
            assert_eq!(param_of(&body).as_deref(), Some(param), "{body}");
        }
        assert_eq!(param_of(r#"{"prompt":"p"}"#).as_deref(), Some("model"));
        assert_eq!(
            param_of(r#"{"model":"m","prompt":" "}"#).as_deref(),
            Some("prompt")
        );
        let long = format!(
            r#"{{"model":"m","prompt":"{}"}}"#,
            "a".repeat(MAX_PROMPT_CHARS + 1)
        );
        assert_eq!(param_of(&long).as_deref(), Some("prompt"));
        assert!(parse_request(b"[1]").is_err());
    }

    #[test]
    fn the_reply_carries_the_image_and_the_receipt() {
        let body = encode_response(
            7,
            b"\x89PNG",
            &Receipt {
                request_id: "r-1",
                charged: NanoUsd(40_000_000),
            },
        );
        let value: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(value["created"], 7);
        assert_eq!(value["data"][0]["b64_json"], "iVBORw==");
        assert_eq!(value["receipt"]["request_id"], "r-1");
        assert_eq!(value["receipt"]["charged_usd"], 0.04);
        assert_eq!(value["receipt"]["status"], "settled");
    }
}
