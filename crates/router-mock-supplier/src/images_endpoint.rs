//! The OpenAI Images endpoint (any path ending in `/images/generations`):
//! [`Images`] plugs the images format into the shared script player, and
//! `GET .../images/content/{name}.png` serves the images a URL answer
//! points at (not recorded as calls).
//!
//! The PNG bytes are built here, with their own CRC code, independently of
//! the router's PNG check, so the mock can catch that check's mistakes.

use base64::Engine;
use bytes::Bytes;
use http::{Response, StatusCode};
use serde_json::{Value, json};

use crate::endpoint::{EventStream, WireProtocol};
use crate::openai_error;
use crate::reply_identity::ReplyIdentity;
use crate::response_body::respond;
use crate::response_body::{self, ResponseBody};
use crate::script::{ImageAnswer, MockImage, MockReply};

/// OpenAI Images generation: never streamed.
#[derive(Debug)]
pub(crate) struct Images;

/// What the images endpoint needs of one request.
#[derive(Debug, Default)]
pub(crate) struct ImagesRequest {
    model: String,
    /// `http://{Host}/v1`-style base of the mock, for URL answers.
    base: String,
}

impl WireProtocol for Images {
    type Request = ImagesRequest;

    const INVALID_JSON_BODY: &'static [u8] = b"{\"created\": 1, \"data\": [";
    const MALFORMED_EVENT: &'static [u8] = b"";

    fn read_request(body: &Value) -> ImagesRequest {
        ImagesRequest {
            model: body["model"].as_str().unwrap_or_default().to_owned(),
            base: String::new(),
        }
    }

    fn read_request_at(body: &Value, path: &str, host: Option<&str>) -> ImagesRequest {
        let prefix = path.strip_suffix("/images/generations").unwrap_or("");
        ImagesRequest {
            base: format!("http://{}{prefix}", host.unwrap_or("127.0.0.1")),
            ..Self::read_request(body)
        }
    }

    /// Azure's gate for a deployment path (`crate::azure`).
    fn check_request(
        headers: &http::HeaderMap,
        path: &str,
        query: Option<&str>,
        _body: &Bytes,
    ) -> Option<(u16, Value)> {
        crate::azure::refusal(headers, path, query)
    }

    fn model(request: &ImagesRequest) -> &str {
        &request.model
    }

    fn streams(_request: &ImagesRequest) -> bool {
        false
    }

    fn reply_body(
        _reply: &MockReply,
        _request: &ImagesRequest,
        _identity: &ReplyIdentity,
    ) -> Value {
        b64_reply(&valid_png())
    }

    fn reply_events(
        _reply: &MockReply,
        _request: &ImagesRequest,
        _identity: &ReplyIdentity,
    ) -> EventStream {
        EventStream::default()
    }

    fn stream_error_event(_identity: &ReplyIdentity, _events_sent: usize, _message: &str) -> Bytes {
        Bytes::new()
    }

    fn error_body(status: u16, message: &str) -> Value {
        openai_error::error_body(status, message)
    }

    fn image_reply(image: &MockImage, request: &ImagesRequest) -> Option<Value> {
        Some(match image.answer {
            ImageAnswer::Url => {
                let url = image
                    .url
                    .clone()
                    .unwrap_or_else(|| format!("{}/images/content/valid.png", request.base));
                json!({"created": unix_now(), "data": [{"url": url}]})
            }
            answer => b64_reply(&image_bytes(answer)),
        })
    }
}

fn b64_reply(bytes: &[u8]) -> Value {
    json!({
        "created": unix_now(),
        "data": [{"b64_json": base64::engine::general_purpose::STANDARD.encode(bytes)}],
    })
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Serves `GET .../images/content/{name}.png`, and
/// `GET .../images/content/redirect?to=URL`: a 302 to `URL` (for the
/// router's redirect checks).
pub(crate) fn serve_content(path: &str, query: Option<&str>) -> Response<ResponseBody> {
    let name = path.rsplit('/').next().unwrap_or_default();
    if name == "redirect" {
        let target = query
            .and_then(|q| q.strip_prefix("to="))
            .unwrap_or_default()
            .to_owned();
        let mut response = respond(StatusCode::FOUND, "text/plain", response_body::full(""));
        if let Ok(location) = http::HeaderValue::from_str(&target) {
            response
                .headers_mut()
                .insert(http::header::LOCATION, location);
        }
        return response;
    }
    let answer = match name {
        "valid.png" => ImageAnswer::Png,
        "truncated.png" => ImageAnswer::TruncatedPng,
        "bad_crc.png" => ImageAnswer::BadCrc,
        "not_png.png" => ImageAnswer::NotPng,
        _ => {
            return crate::response_body::error_response(
                StatusCode::NOT_FOUND,
                &format!("the mock supplier has no image at {path}"),
            );
        }
    };
    respond(
        StatusCode::OK,
        "image/png",
        response_body::full(image_bytes(answer)),
    )
}

/// The bytes of an answer.
pub(crate) fn image_bytes(answer: ImageAnswer) -> Vec<u8> {
    let png = valid_png();
    match answer {
        ImageAnswer::Png | ImageAnswer::Url => png,
        // Cut in the middle of the IEND chunk.
        ImageAnswer::TruncatedPng => png[..png.len() - 6].to_vec(),
        ImageAnswer::BadCrc => {
            let mut bad = png;
            // The first IDAT data byte: 8 (signature) + 25 (IHDR) + 8.
            bad[8 + 25 + 8] ^= 0xFF;
            bad
        }
        ImageAnswer::NotPng => b"GIF89a\x02\x00\x02\x00\x00\x00\x00;".to_vec(),
    }
}

/// A 2x2 8-bit grayscale PNG; the IDAT is a stored (uncompressed) zlib
/// stream, so no compressor is needed.
pub(crate) fn valid_png() -> Vec<u8> {
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    chunk(&mut out, b"IHDR", &[0, 0, 0, 2, 0, 0, 0, 2, 8, 0, 0, 0, 0]);
    // Two scanlines: filter byte 0, then two gray pixels each.
    let raw = [0u8, 0x00, 0xFF, 0, 0xFF, 0x00];
    let mut zlib = vec![0x78, 0x01, 0x01];
    let len = raw.len() as u16;
    zlib.extend_from_slice(&len.to_le_bytes());
    zlib.extend_from_slice(&(!len).to_le_bytes());
    zlib.extend_from_slice(&raw);
    zlib.extend_from_slice(&adler32(&raw).to_be_bytes());
    chunk(&mut out, b"IDAT", &zlib);
    chunk(&mut out, b"IEND", &[]);
    out
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let mut crc_input = kind.to_vec();
    crc_input.extend_from_slice(data);
    out.extend_from_slice(&crc_input);
    out.extend_from_slice(&crc32(&crc_input).to_be_bytes());
}

/// Bitwise CRC-32 (reflected polynomial 0xEDB88320), as PNG uses.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

fn adler32(bytes: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &x in bytes {
        a = (a + u32::from(x)) % 65_521;
        b = (b + a) % 65_521;
    }
    (b << 16) | a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_png_has_the_known_iend_and_the_broken_ones_differ() {
        let png = valid_png();
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
        assert!(png.ends_with(&[0, 0, 0, 0, b'I', b'E', b'N', b'D', 0xAE, 0x42, 0x60, 0x82]));
        for answer in [
            ImageAnswer::TruncatedPng,
            ImageAnswer::BadCrc,
            ImageAnswer::NotPng,
        ] {
            assert_ne!(image_bytes(answer), png);
        }
    }
}
