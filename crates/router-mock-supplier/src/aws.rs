//! What the mock's Bedrock endpoint needs of AWS, written from AWS's
//! published descriptions: checking a request's Signature Version 4 (header
//! form) against the mock's credentials, and framing AWS event-stream
//! messages (prelude, headers, payload, two CRC-32s).

use bytes::Bytes;
use http::HeaderMap;
use ring::{digest, hmac};
use serde_json::{Value, json};

use crate::gemini_endpoint::percent_decode;

/// The access key ID the mock's Bedrock endpoint knows.
pub const MOCK_AWS_ACCESS_KEY_ID: &str = "AKIDMOCKSUPPLIER";
/// Its secret access key.
pub const MOCK_AWS_SECRET_ACCESS_KEY: &str = "mock/supplier/secret/EXAMPLEKEY";

/// Why a request's signature is refused (the text Bedrock's own error
/// message starts with).
pub(crate) fn check_signature(
    method: &str,
    headers: &HeaderMap,
    path: &str,
    query: Option<&str>,
    body: &[u8],
) -> Result<(), String> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let authorization = header("authorization").ok_or("Missing Authentication Token")?;
    let rest = authorization
        .strip_prefix("AWS4-HMAC-SHA256 ")
        .ok_or("Authorization header requires the AWS4-HMAC-SHA256 algorithm")?;
    let mut credential = None;
    let mut signed_headers = None;
    let mut signature = None;
    for field in rest.split(", ") {
        match field.split_once('=') {
            Some(("Credential", v)) => credential = Some(v),
            Some(("SignedHeaders", v)) => signed_headers = Some(v),
            Some(("Signature", v)) => signature = Some(v),
            _ => {}
        }
    }
    let (credential, signed_headers, signature) = match (credential, signed_headers, signature) {
        (Some(c), Some(h), Some(s)) => (c, h, s),
        _ => return Err("Authorization header is incomplete".into()),
    };
    let mut scope = credential.splitn(5, '/');
    let (key_id, date, region, service, terminator) = (
        scope.next().unwrap_or_default(),
        scope.next().unwrap_or_default(),
        scope.next().unwrap_or_default(),
        scope.next().unwrap_or_default(),
        scope.next().unwrap_or_default(),
    );
    if key_id != MOCK_AWS_ACCESS_KEY_ID {
        return Err("The security token included in the request is invalid.".into());
    }
    if terminator != "aws4_request" || service != "bedrock" {
        return Err(format!(
            "Credential should be scoped to correct service: 'bedrock'. ({credential})"
        ));
    }
    let amz_date = header("x-amz-date").ok_or("Missing x-amz-date")?;
    if !amz_date.starts_with(date) {
        return Err("Date in Credential scope does not match the x-amz-date".into());
    }
    let names: Vec<&str> = signed_headers.split(';').collect();
    if !names.contains(&"host") || !names.contains(&"x-amz-date") {
        return Err("host and x-amz-date must be signed".into());
    }
    let mut canonical_headers = String::new();
    for name in &names {
        let values: Vec<String> = headers
            .get_all(*name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        if values.is_empty() {
            return Err(format!("signed header `{name}` is missing"));
        }
        canonical_headers.push_str(&format!("{name}:{}\n", values.join(",")));
    }
    let mut query_pairs: Vec<(String, String)> = query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (
                encode(&percent_decode(k), true),
                encode(&percent_decode(v), true),
            )
        })
        .collect();
    query_pairs.sort();
    let canonical_query = query_pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&");
    let canonical_request = format!(
        "{method}\n{}\n{canonical_query}\n{canonical_headers}\n{signed_headers}\n{}",
        encode(path, false),
        hex(digest::digest(&digest::SHA256, body).as_ref())
    );
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{date}/{region}/{service}/aws4_request\n{}",
        hex(digest::digest(&digest::SHA256, canonical_request.as_bytes()).as_ref())
    );
    let mut key = format!("AWS4{MOCK_AWS_SECRET_ACCESS_KEY}").into_bytes();
    for part in [date, region, service, "aws4_request"] {
        key = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, &key), part.as_bytes())
            .as_ref()
            .to_vec();
    }
    let expected = hex(hmac::sign(
        &hmac::Key::new(hmac::HMAC_SHA256, &key),
        string_to_sign.as_bytes(),
    )
    .as_ref());
    if expected == signature {
        Ok(())
    } else {
        Err("The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.".into())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// URI-encode every byte but the unreserved ones (and `/` unless asked).
fn encode(text: &str, slash: bool) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || (b == b'/' && !slash) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// An event-stream message whose CRC does not match (the malformed event a
/// script can ask an AWS endpoint for).
pub(crate) const MALFORMED_MESSAGE: &[u8] = &[0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];

/// The 403 `{"message"}` Bedrock answers when `check_signature` fails.
pub(crate) fn signature_refusal(
    headers: &HeaderMap,
    path: &str,
    query: Option<&str>,
    body: &Bytes,
) -> Option<(u16, Value)> {
    check_signature("POST", headers, path, query, body)
        .err()
        .map(|message| (403, json!({"message": message})))
}

/// The model ID of a `…/model/{modelId}/{action}` path, percent-decoded.
pub(crate) fn model_in_path(path: &str) -> String {
    let tail = path.rsplit_once("/model/").map_or("", |(_, t)| t);
    percent_decode(tail.split('/').next().unwrap_or_default())
}

/// A JSON event of type `kind`.
pub(crate) fn json_event(kind: &str, payload: &Value) -> Bytes {
    event_message(
        &[
            (":event-type", kind),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload.to_string().as_bytes(),
    )
}

/// The `modelStreamErrorException` that ends a failed Bedrock stream.
pub(crate) fn stream_exception(message: &str) -> Bytes {
    event_message(
        &[
            (":exception-type", "modelStreamErrorException"),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        json!({"message": message}).to_string().as_bytes(),
    )
}

/// One event-stream message with string headers.
pub(crate) fn event_message(headers: &[(&str, &str)], payload: &[u8]) -> Bytes {
    let mut header_bytes = Vec::new();
    for (name, value) in headers {
        header_bytes.push(name.len() as u8);
        header_bytes.extend_from_slice(name.as_bytes());
        header_bytes.push(7);
        header_bytes.extend_from_slice(&(value.len() as u16).to_be_bytes());
        header_bytes.extend_from_slice(value.as_bytes());
    }
    let total = 16 + header_bytes.len() + payload.len();
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&(total as u32).to_be_bytes());
    out.extend_from_slice(&(header_bytes.len() as u32).to_be_bytes());
    let prelude_crc = crc32(&out);
    out.extend_from_slice(&prelude_crc.to_be_bytes());
    out.extend_from_slice(&header_bytes);
    out.extend_from_slice(payload);
    let crc = crc32(&out);
    out.extend_from_slice(&crc.to_be_bytes());
    Bytes::from(out)
}

/// CRC-32 as gzip computes it (bitwise: the mock sends few messages).
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                0xEDB8_8320 ^ (crc >> 1)
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_published_message_frames_alike() {
        // AWS's event-stream test message with one string header.
        let expected: &[u8] = &[
            0, 0, 0, 62, 0, 0, 0, 32, 64, 93, 249, 70, 12, 99, 111, 110, 116, 101, 110, 116, 45,
            116, 121, 112, 101, 7, 0, 16, 97, 112, 112, 108, 105, 99, 97, 116, 105, 111, 110, 47,
            106, 115, 111, 110, 123, 34, 102, 111, 111, 34, 58, 32, 34, 98, 97, 114, 34, 125, 111,
            162, 191, 59,
        ];
        let message = event_message(
            &[("content-type", "application/json")],
            br#"{"foo": "bar"}"#,
        );
        assert_eq!(message.as_ref(), expected);
    }
}
