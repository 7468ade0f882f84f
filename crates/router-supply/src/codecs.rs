//! The supplier dialects the router speaks, one [`SupplierCodec`] each.
//!
//! Adding a dialect is one codec implementation in its wire crate and one
//! line here; encoding, headers and decoding never branch on the protocol.
//! Every codec is strict about usage: a reply the router cannot bill is an
//! invalid reply (G-12).

use router_canonical::{Protocol, SupplierCodec, VideoSupplierCodec};
use router_chat::{ChatSupplier, CompatChatSupplier};
use router_converse::ConverseSupplier;
use router_core::{ChatCompat, Route};
use router_gemini::GeminiSupplier;
use router_messages::{BedrockMessagesSupplier, MessagesSupplier};
use router_responses::ResponsesSupplier;
use router_videos::OpenAiVideosSupplier;

static CHAT: ChatSupplier = ChatSupplier::new().with_require_usage(true);
static MESSAGES: MessagesSupplier = MessagesSupplier::new().with_require_usage(true);
static RESPONSES: ResponsesSupplier = ResponsesSupplier::new().with_require_usage(true);
static GEMINI: GeminiSupplier = GeminiSupplier {
    require_usage: true,
};
static CONVERSE: ConverseSupplier = ConverseSupplier {
    require_usage: true,
};
static BEDROCK_MESSAGES: BedrockMessagesSupplier =
    BedrockMessagesSupplier::new().with_require_usage(true);

/// The codec of a route's protocol. `Completions` is inbound only (it
/// rides the Chat path), so no route speaks it and it has no codec.
pub(crate) fn for_protocol(protocol: Protocol) -> Option<&'static dyn SupplierCodec> {
    [
        &CHAT as &'static dyn SupplierCodec,
        &MESSAGES,
        &RESPONSES,
        &GEMINI,
        &BEDROCK_MESSAGES,
        &CONVERSE,
    ]
    .into_iter()
    .find(|codec| codec.protocol() == protocol)
}

/// The Chat codec of a route whose OpenAI-compatible server has
/// `compat` options; `None` when it has none (the shared codec serves).
pub(crate) fn chat_compat(route: &Route) -> Option<CompatChatSupplier> {
    if route.protocol != Protocol::Chat || route.compat.is_empty() {
        return None;
    }
    let mut compat = router_chat::ChatCompat::default();
    for option in &route.compat {
        match option {
            ChatCompat::DeveloperAsSystem => compat.developer_as_system = true,
            ChatCompat::MaxTokens => compat.max_tokens = true,
            ChatCompat::NoStreamOptions => compat.no_stream_options = true,
            ChatCompat::StreamWithoutDone => compat.stream_without_done = true,
        }
    }
    Some(CompatChatSupplier::new(CHAT, compat))
}

/// The video dialect of `videos` routes (the only one: OpenAI videos).
static VIDEOS: OpenAiVideosSupplier = OpenAiVideosSupplier;

/// The codec of a `videos` route: create, poll and content paths, the
/// create body and the task replies.
pub fn video_codec() -> &'static dyn VideoSupplierCodec {
    &VIDEOS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_protocol_has_its_codec() {
        for protocol in [
            Protocol::Chat,
            Protocol::Messages,
            Protocol::Responses,
            Protocol::Gemini,
            Protocol::BedrockMessages,
            Protocol::BedrockConverse,
        ] {
            assert_eq!(for_protocol(protocol).map(|c| c.protocol()), Some(protocol));
        }
        assert!(for_protocol(Protocol::Completions).is_none());
        assert!(
            for_protocol(Protocol::Videos).is_none(),
            "videos have their own codec"
        );
        assert_eq!(video_codec().create_path(), "/videos");
    }
}
