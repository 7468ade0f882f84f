//! `POST /v1/completions` (legacy): the prompt rides the Chat path with the
//! same authentication, pricing, retries and single settlement (E-09,
//! CF-11), and is answered as `text_completion` JSON or chunks.

use crate::body::INFERENCE_BODY_LIMIT;
use crate::inference::{InferenceSurface, ReplyContext, unix_now};
use crate::reply::Surface;
use router_canonical::{ApiError, Protocol, Request, Response};
use router_completions::{CompletionRequest, ResponseContext, StreamContext, StreamEncoder};

pub struct Completions;

impl InferenceSurface for Completions {
    const PROTOCOL: Protocol = Protocol::Completions;
    const ERRORS: Surface = Surface::OpenAi;
    const BODY_LIMIT: usize = INFERENCE_BODY_LIMIT;
    const ID_PREFIX: &'static str = "cmpl-";
    /// The prompt, when `echo` asks for it to be prepended.
    type Extra = Option<String>;
    type StreamEncoder = StreamEncoder;

    fn parse(
        _headers: &http::HeaderMap,
        body: &[u8],
    ) -> Result<(Request, Option<String>), ApiError> {
        let CompletionRequest { request, echo } = router_completions::parse_request(body)?;
        Ok((request, echo))
    }

    fn encode_response(response: &Response, ctx: &ReplyContext<'_, Option<String>>) -> Vec<u8> {
        let ctx = ResponseContext {
            id: ctx.id,
            model: ctx.model,
            created: response.created,
            cost: ctx.cost,
            echo: ctx.extra.as_deref(),
        };
        router_completions::encode_response(response, &ctx)
    }

    fn stream_encoder(id: String, model: String, echo: Option<String>) -> StreamEncoder {
        StreamEncoder::new(StreamContext {
            id,
            model,
            created: unix_now(),
            echo,
        })
    }
}
