//! The shapes of this crate's request and answer for an OpenAPI document (feature
//! `openapi`), next to the code that reads and renders them. They only
//! describe: nothing constructs them.

#![allow(dead_code)]

use utoipa::ToSchema;

/// `POST /v1/images/generations`: the OpenAI Images request, as far as the
/// router takes it (one PNG of automatic size and quality; docs/images.md).
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ImageGenerationRequest {
    #[schema(min_length = 1)]
    model: String,
    #[schema(min_length = 1, max_length = 32000)]
    prompt: String,
    #[schema(minimum = 1, maximum = 1)]
    n: Option<u8>,
    #[schema(pattern = "^auto$")]
    size: Option<String>,
    #[schema(pattern = "^auto$")]
    quality: Option<String>,
    #[schema(pattern = "^b64_json$")]
    response_format: Option<String>,
    #[schema(pattern = "^png$")]
    output_format: Option<String>,
    user: Option<String>,
}

/// One generated image.
#[derive(ToSchema)]
pub struct GeneratedImage {
    /// The PNG, base64.
    b64_json: String,
}

/// What a generation was charged.
#[derive(ToSchema)]
pub struct ImageReceipt {
    request_id: String,
    charged_usd: f64,
    /// `settled`.
    status: String,
}

/// `POST /v1/images/generations`'s answer.
#[derive(ToSchema)]
pub struct ImageGeneration {
    /// Unix seconds.
    created: i64,
    #[schema(min_items = 1, max_items = 1)]
    data: Vec<GeneratedImage>,
    receipt: ImageReceipt,
}
