//! One image generation against an `images` route: encode with the image
//! codec, send, read the answer, download a `url` answer under the URL
//! rules (`url_guard`), and check the bytes are one complete PNG. No retry
//! here or above: the attempt is the only one (N-08). The route's
//! connection settings apply as on inference routes (`connection`): the
//! `{model}` of the base URL, extra query parameters (Azure's
//! `api-version`), the supplier's authentication and static headers.

use crate::attempt::read_body;
use crate::connection::{self, Outgoing};
use crate::transport_error;
use crate::url_guard::{self, UrlPolicy};
use router_canonical::{GeneratedImage, ImageRequest, ImageSupplierCodec};
use router_core::{AttemptCall, AttemptError, Route};
use router_images::ImagesSupplier;
use std::time::Duration;

/// The image codec of the `images` route protocol.
static IMAGES: ImagesSupplier = ImagesSupplier;

/// How long a URL download may take at most; the caller's image deadline
/// bounds the whole attempt anyway.
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(120);

/// The most of an error reply the router reads to classify it.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

pub(crate) async fn generate(
    client: &reqwest::Client,
    policy: UrlPolicy,
    route: &Route,
    request: &ImageRequest,
    call: &AttemptCall,
    bearer: Option<&str>,
) -> Result<Vec<u8>, AttemptError> {
    let codec: &dyn ImageSupplierCodec = &IMAGES;
    let url = connection::url(route, codec.path())?;
    let body = codec
        .encode_request(request, &route.upstream_model)
        .map_err(AttemptError::conversion)?;
    let outgoing = Outgoing {
        method: "POST",
        url: &url,
        body: Some(&body),
    };
    let headers = connection::request_headers(route, &outgoing, |key| codec.headers(key), bearer)?;
    let mut builder = client.post(url).body(body);
    for (name, value) in headers {
        builder = builder.header(name, value);
    }
    for (name, value) in call.headers() {
        builder = builder.header(name, value);
    }
    let response = builder.send().await.map_err(|e| transport_error(&e))?;
    call.supplier_replied(|name| response.headers().get(name)?.to_str().ok());
    let status = response.status();
    if !status.is_success() {
        let headers = response.headers().clone();
        let mut body = Vec::new();
        let mut response = response;
        while let Ok(Some(chunk)) = response.chunk().await {
            body.extend_from_slice(&chunk);
            if body.len() >= MAX_ERROR_BODY_BYTES {
                break;
            }
        }
        return Err(AttemptError::supplier(codec.decode_error(
            status.as_u16(),
            &crate::ReplyHeaders(&headers),
            &body,
        )));
    }
    let body = read_body(response).await?;
    let png = match codec
        .decode_response(&body)
        .map_err(AttemptError::supplier)?
    {
        GeneratedImage::Bytes(bytes) => bytes,
        GeneratedImage::Url(url) => url_guard::download(&url, policy, DOWNLOAD_TIMEOUT)
            .await
            .map_err(|e| AttemptError::invalid_response(format!("image URL: {e}")))?,
    };
    router_images::png::validate(&png)
        .map_err(|e| AttemptError::invalid_response(format!("supplier image: {e}")))?;
    Ok(png)
}
