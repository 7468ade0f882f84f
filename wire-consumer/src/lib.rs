//! Translations a service outside the router writes with its wire crates:
//! Chat clients served by a Messages supplier, Responses clients served by
//! a Chat supplier, and supplier errors answered in the client's envelope.

use router_chat::{ChatClient, ChatSupplier};
use router_messages::MessagesSupplier;
use router_messages::{
    ApiError, ClientCodec, ErrorReply, HeaderSource, ReplyContext, StreamContext,
    StreamTranslator, SupplierCodec, SupplierError, SupplierTarget,
};
use router_responses::ResponsesClient;

/// Why a translation failed.
#[derive(Debug)]
pub enum Failure {
    /// The client's request is invalid or cannot be carried.
    Client(ApiError),
    /// The supplier failed or answered something unreadable.
    Supplier(SupplierError),
}

/// A Chat request as a Messages body for `model`.
pub fn chat_to_messages_request(chat: &[u8], model: &str) -> Result<Vec<u8>, Failure> {
    let (request, _) = ChatClient::default()
        .parse_request(&(), chat)
        .map_err(Failure::Client)?;
    MessagesSupplier::default()
        .encode_request(
            &request,
            &SupplierTarget::new(model).with_default_max_output_tokens(Some(1024)),
        )
        .map_err(Failure::Client)
}

/// A Messages reply as the Chat client's `chat.completion`.
pub fn messages_to_chat_reply(chat: &[u8], reply: &[u8]) -> Result<Vec<u8>, Failure> {
    let client = ChatClient::default();
    let (request, extra) = client.parse_request(&(), chat).map_err(Failure::Client)?;
    let response = MessagesSupplier::default()
        .decode_response(reply)
        .map_err(Failure::Supplier)?;
    let context = ReplyContext::new("chatcmpl-1", &request.model, 1_700_000_000);
    Ok(client.encode_response(&response, &context, &extra))
}

/// A Messages SSE stream, fed in pieces, as the Chat client's chunks.
pub fn messages_to_chat_stream(chat: &[u8], pieces: &[&[u8]]) -> Result<Vec<u8>, Failure> {
    let client = ChatClient::default();
    let (request, extra) = client.parse_request(&(), chat).map_err(Failure::Client)?;
    let context = StreamContext::new("chatcmpl-1", request.model, 1_700_000_000);
    let mut translator = StreamTranslator::new(
        &MessagesSupplier::default(),
        client.stream_encoder(context, extra),
    );
    let mut out = Vec::new();
    for piece in pieces {
        translator.feed(piece, &mut out).map_err(Failure::Supplier)?;
    }
    translator.finish(&mut out).map_err(Failure::Supplier)?;
    Ok(out)
}

/// A Responses request as a Chat body, and the Chat reply back as the
/// Responses client's `response` object.
pub fn responses_via_chat(
    responses: &[u8],
    model: &str,
    chat_reply: &[u8],
) -> Result<(Vec<u8>, Vec<u8>), Failure> {
    let (request, namespaces) = ResponsesClient
        .parse_request(&(), responses)
        .map_err(Failure::Client)?;
    let chat = ChatSupplier::default();
    let body = chat
        .encode_request(&request, &SupplierTarget::new(model))
        .map_err(Failure::Client)?;
    let response = chat.decode_response(chat_reply).map_err(Failure::Supplier)?;
    let context = ReplyContext::new("resp_1", &request.model, 1_700_000_000);
    Ok((
        body,
        ResponsesClient.encode_response(&response, &context, &namespaces),
    ))
}

/// An Anthropic error reply, decoded and answered in the Chat envelope.
pub fn messages_error_for_chat(
    status: u16,
    headers: &dyn HeaderSource,
    body: &[u8],
) -> (SupplierError, ErrorReply) {
    let error = MessagesSupplier::default().decode_error(status, headers, body);
    let reply = ChatClient::default().supplier_error_reply(&error);
    (error, reply)
}
