//! The OpenAI Images supplier dialect: `POST {base_url}/images/generations`
//! with `{model, prompt, n: 1, user?}`, answered by `{created, data:
//! [{b64_json} | {url}]}`.
//!
//! The request names neither size, quality nor format, so the supplier's
//! defaults apply (automatic dimensions). `response_format` is not
//! sent either: GPT image models refuse it and always answer `b64_json`,
//! DALL-E models default to `url`; the decoder takes either.

use base64::Engine;
use router_canonical::openai_error::{bearer_auth, supplier_failure};
use router_canonical::{
    ApiError, GeneratedImage, ImageRequest, ImageSupplierCodec, Protocol, SupplierError,
};
use serde::{Deserialize, Serialize};

/// Why a supplier's success reply holds no usable image.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The body is not an images reply (the parser's reason).
    #[error("the reply is not an images reply: {0}")]
    Json(String),
    /// The reply holds this many images, not one.
    #[error("the reply holds {0} images, not one")]
    Count(usize),
    /// The image has neither `b64_json` nor `url`.
    #[error("the image has neither `b64_json` nor `url`")]
    Empty,
    /// `b64_json` is not valid base64.
    #[error("`b64_json` is not valid base64")]
    Base64,
}

/// The OpenAI Images supplier codec.
#[derive(Debug, Clone, Copy, Default)]
pub struct ImagesSupplier;

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    prompt: &'a str,
    n: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    user: Option<&'a str>,
}

#[derive(Deserialize)]
struct WireReply {
    data: Vec<WireImage>,
}

#[derive(Deserialize)]
struct WireImage {
    #[serde(default)]
    b64_json: Option<String>,
    #[serde(default)]
    url: Option<String>,
}

impl ImageSupplierCodec for ImagesSupplier {
    fn protocol(&self) -> Protocol {
        Protocol::Images
    }

    fn path(&self) -> &'static str {
        "/images/generations"
    }

    fn encode_request(
        &self,
        request: &ImageRequest,
        upstream_model: &str,
    ) -> Result<Vec<u8>, ApiError> {
        serde_json::to_vec(&WireRequest {
            model: upstream_model,
            prompt: &request.prompt,
            n: 1,
            user: request.user.as_deref(),
        })
        .map_err(|e| {
            ApiError::new(
                router_canonical::ErrorCode::InternalError,
                format!("could not encode the image request: {e}"),
            )
        })
    }

    fn headers(&self, api_key: Option<&str>) -> Vec<(&'static str, String)> {
        bearer_auth(api_key)
    }

    fn decode_response(&self, body: &[u8]) -> Result<GeneratedImage, SupplierError> {
        let reply: WireReply = serde_json::from_slice(body)
            .map_err(|e| SupplierError::invalid(DecodeError::Json(e.to_string())))?;
        let [image] = <[WireImage; 1]>::try_from(reply.data)
            .map_err(|data| SupplierError::invalid(DecodeError::Count(data.len())))?;
        match (image.b64_json, image.url) {
            (Some(b64), _) => base64::engine::general_purpose::STANDARD
                .decode(b64.as_bytes())
                .map(GeneratedImage::Bytes)
                .map_err(|_| SupplierError::invalid(DecodeError::Base64)),
            (None, Some(url)) => Ok(GeneratedImage::Url(url)),
            (None, None) => Err(SupplierError::invalid(DecodeError::Empty)),
        }
    }

    fn decode_error(
        &self,
        status: u16,
        headers: &dyn router_canonical::HeaderSource,
        body: &[u8],
    ) -> SupplierError {
        SupplierError::Reported(supplier_failure(status, headers, body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn the_request_names_only_model_prompt_n_and_user() {
        let request = ImageRequest {
            model: "public".into(),
            prompt: "a cat".into(),
            user: Some("u".into()),
        };
        let body = ImagesSupplier.encode_request(&request, "up-img").unwrap();
        let value: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            value,
            json!({"model": "up-img", "prompt": "a cat", "n": 1, "user": "u"})
        );
        assert_eq!(ImagesSupplier.path(), "/images/generations");
    }

    #[test]
    fn replies_decode_to_bytes_or_a_url() {
        let bytes = ImagesSupplier
            .decode_response(br#"{"created":1,"data":[{"b64_json":"iVBORw=="}]}"#)
            .unwrap();
        assert_eq!(bytes, GeneratedImage::Bytes(b"\x89PNG".to_vec()));
        let url = ImagesSupplier
            .decode_response(br#"{"created":1,"data":[{"url":"https://x/a.png"}]}"#)
            .unwrap();
        assert_eq!(url, GeneratedImage::Url("https://x/a.png".into()));
        for bad in [
            &br#"{"data":[]}"#[..],
            br#"{"data":[{"b64_json":"a"},{"b64_json":"b"}]}"#,
            br#"{"data":[{}]}"#,
            br#"{"data":[{"b64_json":"***"}]}"#,
            b"not json",
        ] {
            let error = ImagesSupplier.decode_response(bad).unwrap_err();
            assert!(matches!(error, SupplierError::InvalidReply(_)), "{error}");
        }
        let reported =
            ImagesSupplier.decode_error(500, &(), br#"{"error":{"type":"server_error"}}"#);
        assert_eq!(reported.reported().and_then(|f| f.status), Some(500));
    }
}
