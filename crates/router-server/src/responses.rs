//! `POST /v1/responses` (stateless): a `response` object or the
//! `response.*` event stream.

use crate::body::INFERENCE_BODY_LIMIT;
use crate::inference::{InferenceSurface, ReplyContext, unix_now};
use crate::reply::Surface;
use router_canonical::{ApiError, Protocol, Request, Response};
use router_responses::{ResponseContext, StreamContext, StreamEncoder};

pub struct Responses;

impl InferenceSurface for Responses {
    const PROTOCOL: Protocol = Protocol::Responses;
    const ERRORS: Surface = Surface::OpenAi;
    const BODY_LIMIT: usize = INFERENCE_BODY_LIMIT;
    const ID_PREFIX: &'static str = "resp_";
    type Extra = ();
    type StreamEncoder = StreamEncoder;

    fn parse(_headers: &http::HeaderMap, body: &[u8]) -> Result<(Request, ()), ApiError> {
        Ok((router_responses::parse_request(body)?, ()))
    }

    fn encode_response(response: &Response, ctx: &ReplyContext<'_, ()>) -> Vec<u8> {
        let ctx = ResponseContext {
            id: ctx.id,
            model: ctx.model,
            created: response.created,
            cost: ctx.cost,
        };
        router_responses::encode_response(response, &ctx)
    }

    fn stream_encoder(id: String, model: String, (): ()) -> StreamEncoder {
        StreamEncoder::new(StreamContext {
            id,
            model,
            created: unix_now(),
        })
    }
}
