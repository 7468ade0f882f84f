//! A protocol's codecs called the way its tests call them: a body in, the
//! canonical request (without the protocol's extra) or the upstream body out.

use router_canonical::{
    ApiError, ClientCodec, HeaderSource, Request, RoutingOptions, SupplierCodec, SupplierTarget,
};

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
/// [`BodyExtensions`](router_canonical::BodyExtensions) into `Request::routing`. What only this protocol
/// keeps (its extra) is dropped.
pub fn parse<C: ClientCodec>(
    codec: &C,
    headers: &dyn HeaderSource,
    body: &[u8],
) -> Result<Request, ApiError> {
    let mut routing = RoutingOptions::default();
    let (mut request, _) = codec.parse_request_with(headers, body, &mut routing)?;
    request.routing = routing;
    Ok(request)
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
