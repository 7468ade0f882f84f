//! Anthropic's Messages body on Amazon Bedrock: `POST
//! /model/{modelId}/invoke` and `/model/{modelId}/invoke-with-response-stream`.
//!
//! The body is the Messages body without `model` (it is in the path) and
//! `stream` (the path says it), with `anthropic_version:
//! "bedrock-2023-05-31"` and the beta identifiers as `anthropic_beta`. The
//! reply is a Messages `message`. The stream is AWS event stream: each
//! `chunk` event's payload is `{"bytes": base64}` whose bytes are one
//! Messages stream event, read by the Messages stream decoder; an exception
//! message (`throttlingException`, `modelStreamErrorException`, ...) is the
//! supplier's reported failure. Error replies are `{"message": ...}`.

use super::MessagesSupplier;
use super::error::DecodeError;
use super::request;
use super::response;
use super::stream::StreamDecoder;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use router_canonical::parse::InvalidJson;
use router_canonical::sse::Frame;
use router_canonical::{
    ApiError, ErrorCode, Protocol, Request, Response, StreamEvent, StreamFraming, SupplierCodec,
    SupplierError, SupplierFailure, SupplierStreamDecoder, SupplierTarget, encode_path_segment,
};
use serde::Deserialize;
use serde_json::Value;

/// The `anthropic_version` Bedrock requires in the body.
pub const BEDROCK_ANTHROPIC_VERSION: &str = "bedrock-2023-05-31";

/// Claude on Amazon Bedrock through `InvokeModel`: the Messages body, SigV4
/// authentication (the route's supplier settings), AWS event-stream
/// streaming. Carries what [`MessagesSupplier`] carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BedrockMessagesSupplier {
    /// As [`MessagesSupplier::require_usage`].
    pub require_usage: bool,
}

impl BedrockMessagesSupplier {
    /// The protocol's defaults: a reply without usage reads as zero usage.
    pub const fn new() -> Self {
        BedrockMessagesSupplier {
            require_usage: false,
        }
    }

    /// This codec refusing (`true`) or accepting a reply without usage.
    pub const fn with_require_usage(mut self, require_usage: bool) -> Self {
        self.require_usage = require_usage;
        self
    }
}

impl BedrockMessagesSupplier {
    fn messages(&self) -> MessagesSupplier {
        MessagesSupplier {
            require_usage: self.require_usage,
        }
    }
}

impl SupplierCodec for BedrockMessagesSupplier {
    fn protocol(&self) -> Protocol {
        Protocol::BedrockMessages
    }

    /// The non-streaming path with the model left open; see `request_path`.
    fn path(&self) -> &'static str {
        "/model/{model}/invoke"
    }

    fn request_path(&self, target: &SupplierTarget<'_>, stream: bool) -> String {
        let action = if stream {
            "invoke-with-response-stream"
        } else {
            "invoke"
        };
        format!("/model/{}/{action}", encode_path_segment(target.model))
    }

    fn stream_framing(&self) -> StreamFraming {
        StreamFraming::AwsEventStream
    }

    /// The Messages body of [`MessagesSupplier::encode_request`] without
    /// `model` and `stream`, with `anthropic_version` first and the beta
    /// identifiers of a request that came in over Messages as
    /// `anthropic_beta`.
    fn encode_request(
        &self,
        request: &Request,
        target: &SupplierTarget<'_>,
    ) -> Result<Vec<u8>, ApiError> {
        request.refuse_native_only(self.protocol())?;
        request.refuse_several_choices()?;
        let body = request::request(request, target)?;
        let serialization = |err: serde_json::Error| {
            ApiError::new(
                ErrorCode::InternalError,
                format!("could not serialize the Bedrock request: {err}"),
            )
        };
        let Value::Object(fields) = serde_json::from_slice(&body).map_err(serialization)? else {
            return Err(ApiError::new(
                ErrorCode::InternalError,
                "the Messages body is not an object",
            ));
        };
        let mut out = serde_json::Map::new();
        out.insert(
            "anthropic_version".into(),
            Value::String(BEDROCK_ANTHROPIC_VERSION.into()),
        );
        if let Some(native) = &request.native
            && native.protocol == Some(Protocol::Messages)
            && !native.betas.is_empty()
        {
            out.insert("anthropic_beta".into(), Value::from(native.betas.clone()));
        }
        out.extend(
            fields
                .into_iter()
                .filter(|(name, _)| name != "model" && name != "stream"),
        );
        serde_json::to_vec(&Value::Object(out)).map_err(serialization)
    }

    /// No headers of the dialect's own: authentication is the supplier's
    /// (SigV4), the version is in the body.
    fn headers(&self, _request: &Request, _api_key: Option<&str>) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    fn decode_response(&self, body: &[u8]) -> Result<Response, SupplierError> {
        response::response(body, self.require_usage).map_err(SupplierError::from)
    }

    /// Bedrock's error body is `{"message": "..."}`; the type travels in
    /// the `x-amzn-ErrorType` header (`ThrottlingException:http://...`).
    fn decode_error(
        &self,
        status: u16,
        headers: &dyn router_canonical::HeaderSource,
        body: &[u8],
    ) -> SupplierError {
        #[derive(Deserialize, Default)]
        struct ErrorBody {
            #[serde(default, alias = "Message")]
            message: Option<String>,
        }
        let body: ErrorBody = serde_json::from_slice(body).unwrap_or_default();
        let mut failure = SupplierFailure::from_reply(status, headers);
        failure.kind = router_canonical::eventstream::amzn_error_type(headers);
        failure.message = body.message;
        SupplierError::Reported(failure)
    }

    fn stream_decoder(&self) -> Box<dyn SupplierStreamDecoder> {
        Box::new(BedrockStreamDecoder {
            inner: StreamDecoder::new(&self.messages()),
        })
    }
}

/// Reads Bedrock's event-stream messages (as frames) into Messages events.
#[derive(Debug)]
pub struct BedrockStreamDecoder {
    inner: StreamDecoder,
}

#[derive(Deserialize)]
struct Chunk {
    bytes: String,
}

#[derive(Deserialize, Default)]
struct Exception {
    #[serde(default)]
    message: Option<String>,
}

impl SupplierStreamDecoder for BedrockStreamDecoder {
    fn decode(&mut self, frame: &Frame) -> Result<Vec<StreamEvent>, SupplierError> {
        match frame.event.as_deref() {
            Some("chunk") => {
                let chunk: Chunk = serde_json::from_str(&frame.data).map_err(|err| {
                    SupplierError::invalid(DecodeError::InvalidJson(InvalidJson {
                        path: ".bytes".into(),
                        message: err.to_string(),
                    }))
                })?;
                let bytes = STANDARD.decode(chunk.bytes.as_bytes()).map_err(|err| {
                    SupplierError::invalid(DecodeError::InvalidJson(InvalidJson {
                        path: ".bytes".into(),
                        message: format!("not base64: {err}"),
                    }))
                })?;
                let data = String::from_utf8(bytes).map_err(|_| {
                    SupplierError::invalid(DecodeError::InvalidJson(InvalidJson {
                        path: ".bytes".into(),
                        message: "not UTF-8".into(),
                    }))
                })?;
                self.inner.decode(&Frame { event: None, data })
            }
            // Every other message Bedrock sends on this stream is an
            // exception (`throttlingException`, `modelStreamErrorException`,
            // `internalServerException`, ...): the supplier's own failure.
            Some(kind) if kind.ends_with("Exception") => {
                let exception: Exception = serde_json::from_str(&frame.data).unwrap_or_default();
                Err(SupplierError::Reported(SupplierFailure::in_reply(
                    Some(kind.to_owned()),
                    None,
                    exception.message,
                )))
            }
            // Unknown events are dropped, as unknown Messages events are.
            _ => Ok(Vec::new()),
        }
    }

    fn is_finished(&self) -> bool {
        self.inner.is_finished()
    }
}
