//! Every wire crate exports the shared names at the same paths: a consumer
//! switching crates changes the crate name, not the path.

use std::any::TypeId;

macro_rules! same_in_every_crate {
    ($($name:ident),* $(,)?) => {$(
        let ids = [
            TypeId::of::<router_chat::$name>(),
            TypeId::of::<router_messages::$name>(),
            TypeId::of::<router_responses::$name>(),
            TypeId::of::<router_completions::$name>(),
        ];
        assert!(ids.iter().all(|id| *id == ids[0]), stringify!($name));
    )*};
}

#[test]
fn the_shared_names_are_at_the_same_paths() {
    same_in_every_crate!(
        ApiError,
        ErrorCode,
        ErrorReply,
        Request,
        Response,
        StreamEvent,
        StreamContext,
        SupplierError,
        SupplierErrorCategory,
        SupplierFailure,
        FrameDecoder,
        Frame,
    );
    // The SSE framer and the codec traits, by path.
    let _: router_chat::sse::Decoder = router_messages::sse::Decoder::default();
    let _: router_responses::sse::Decoder = router_completions::sse::Decoder::default();
    fn client_codec<C: router_messages::ClientCodec>(_: &C) {}
    client_codec(&router_chat::ChatClient::default());
    client_codec(&router_responses::ResponsesClient);
    client_codec(&router_completions::CompletionsClient);
    fn supplier_codec<C: router_chat::SupplierCodec>(_: &C) {}
    supplier_codec(&router_messages::MessagesSupplier::default());
    supplier_codec(&router_responses::ResponsesSupplier::default());
    // Each client crate's stream encoder and supplier crate's decoder are
    // `StreamEncoder` and `StreamDecoder` at its root.
    fn encoder<E: router_chat::ClientStreamEncoder>() {}
    encoder::<router_chat::StreamEncoder>();
    encoder::<router_messages::StreamEncoder>();
    encoder::<router_responses::StreamEncoder>();
    encoder::<router_completions::StreamEncoder>();
    fn decoder<D: router_chat::SupplierStreamDecoder>() {}
    decoder::<router_chat::StreamDecoder>();
    decoder::<router_messages::StreamDecoder>();
    decoder::<router_responses::StreamDecoder>();
}
