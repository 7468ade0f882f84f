//! The four inference surfaces: each is a client codec of its wire crate
//! plus what only the server knows (body limit, id prefix, headers).
//! Everything protocol-specific (validation, reply and stream encoding, the
//! error envelope) is the codec's.

use crate::body::{INFERENCE_BODY_LIMIT, MESSAGES_BODY_LIMIT};
use router_canonical::ClientCodec;
use router_chat::ChatClient;
use router_completions::CompletionsClient;
use router_core::thinking_seal::SealError;
use router_messages::MessagesClient;
use router_responses::ResponsesClient;

/// One inference endpoint: its client codec and HTTP-level settings.
pub struct Surface<C> {
    pub codec: C,
    pub body_limit: usize,
    /// Prefix of the response id; the request id follows it.
    pub id_prefix: &'static str,
    /// Messages responses carry `request-id` as well as `x-request-id` (D-34, CF-12).
    pub messages_request_id: bool,
    /// The `param` naming a thinking block whose router signature was
    /// refused, in the client's own indexes (called on that error only).
    pub signature_param: fn(&[u8], &SealError) -> String,
}

/// The `param` naming a thinking block whose router signature was refused,
/// in the client's own message indexes: the canonical request has the
/// Messages `system` prompt as messages of its own in front.
fn messages_signature_param(body: &[u8], error: &SealError) -> String {
    #[derive(serde::Deserialize)]
    struct Messages {
        messages: Vec<serde::de::IgnoredAny>,
    }
    let in_canonical = error.message;
    let message = match serde_json::from_slice::<Messages>(body) {
        Ok(wire) => {
            in_canonical.saturating_sub(error.total_messages.saturating_sub(wire.messages.len()))
        }
        Err(_) => in_canonical,
    };
    format!("messages[{message}].content[{}].signature", error.part)
}

fn canonical_signature_param(_body: &[u8], error: &SealError) -> String {
    error.canonical_path()
}

/// `POST /v1/chat/completions`. The usage chunk (with the cost) ends every
/// stream, asked for or not (B-22, GP-04).
pub static CHAT: Surface<ChatClient> = Surface {
    codec: ChatClient::new().with_always_include_usage(true),
    body_limit: INFERENCE_BODY_LIMIT,
    id_prefix: "chatcmpl-",
    messages_request_id: false,
    signature_param: canonical_signature_param,
};

/// `POST /v1/responses` (stateless).
pub static RESPONSES: Surface<ResponsesClient> = Surface {
    codec: ResponsesClient,
    body_limit: INFERENCE_BODY_LIMIT,
    id_prefix: "resp_",
    messages_request_id: false,
    signature_param: canonical_signature_param,
};

/// `POST /v1/messages`.
pub static MESSAGES: Surface<MessagesClient> = Surface {
    codec: MessagesClient,
    body_limit: MESSAGES_BODY_LIMIT,
    id_prefix: "msg_",
    messages_request_id: true,
    signature_param: messages_signature_param,
};

/// `POST /v1/completions` (legacy): rides the Chat path (E-09, CF-11).
pub static COMPLETIONS: Surface<CompletionsClient> = Surface {
    codec: CompletionsClient,
    body_limit: INFERENCE_BODY_LIMIT,
    id_prefix: "cmpl-",
    messages_request_id: false,
    signature_param: canonical_signature_param,
};

impl<C: ClientCodec> Surface<C> {
    /// The error reply of this surface, in its codec's envelope.
    pub fn error(
        &self,
        error: &router_canonical::ApiError,
        request_id: &str,
    ) -> crate::reply::Reply {
        crate::reply::codec_error(
            self.codec.error_body(error),
            error,
            request_id,
            self.messages_request_id,
        )
    }
}
