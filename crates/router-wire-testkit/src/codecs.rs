//! A protocol's codecs called the way its tests call them: a body in, the
//! canonical request (without the protocol's extra) or the upstream body out.

use router_canonical::{
    ApiError, ClientCodec, HeaderSource, Request, SupplierCodec, SupplierTarget,
};
use router_core::RoutingOptions;

/// Request headers from a fixed table of (lower-case name, value).
pub struct FixedHeaders(pub &'static [(&'static str, &'static str)]);

impl HeaderSource for FixedHeaders {
    fn header(&self, name: &str) -> Option<&str> {
        let found = self.0.iter().find(|(key, _)| *key == name);
        found.map(|(_, value)| *value)
    }
}

/// `codec`'s canonical request for `body` as the gateway parses it: with
/// its routing fields (`zdr`, `min_discount_percent`) taken as
/// [`BodyExtensions`](router_canonical::BodyExtensions) into the gateway's
/// [`RoutingOptions`], which are dropped. What only this protocol keeps (its
/// extra) is dropped too.
pub fn parse<C: ClientCodec>(
    codec: &C,
    headers: &dyn HeaderSource,
    body: &[u8],
) -> Result<Request, ApiError> {
    parse_routed(codec, headers, body).map(|(request, _)| request)
}

/// [`parse`], with the gateway's routing options read from the body.
pub fn parse_routed<C: ClientCodec>(
    codec: &C,
    headers: &dyn HeaderSource,
    body: &[u8],
) -> Result<(Request, RoutingOptions), ApiError> {
    let mut routing = RoutingOptions::default();
    let (request, _) = codec.parse_request_with(headers, body, &mut routing)?;
    Ok((request, routing))
}

/// `codec`'s canonical request for `body` as a library caller parses it
/// (`parse_request`): no gateway extensions.
pub fn parse_plain<C: ClientCodec>(
    codec: &C,
    headers: &dyn HeaderSource,
    body: &[u8],
) -> Result<Request, ApiError> {
    codec
        .parse_request(headers, body)
        .map(|(request, _)| request)
}

/// `supplier`'s upstream body of `request` for `model`.
pub fn encode<S: SupplierCodec>(
    supplier: &S,
    request: &Request,
    model: &str,
    default_max_output_tokens: Option<u32>,
) -> Result<Vec<u8>, ApiError> {
    let target =
        SupplierTarget::new(model).with_default_max_output_tokens(default_max_output_tokens);
    supplier.encode_request(request, &target)
}
