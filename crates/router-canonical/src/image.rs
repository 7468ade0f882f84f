//! Image generation: the canonical request and reply, and the supplier-side
//! codec trait of image dialects.
//!
//! Image generation is not a chat dialect: there are no messages, no token
//! usage and no stream, so it does not fit [`crate::SupplierCodec`], whose
//! every method speaks [`crate::Request`] and [`crate::Response`]. It has a
//! small sibling trait in the same spirit instead: [`ImageSupplierCodec`]
//! encodes a typed [`ImageRequest`] for one supplier dialect and decodes its
//! answer into a typed [`GeneratedImage`], with the same typed
//! [`SupplierError`] kinds (reported, invalid reply), so the gateway's
//! retry-free failure mapping is the chat one.

use crate::codec::SupplierError;
use crate::{ApiError, Protocol};

/// One image to generate, as the gateway routes it. Only what the spec lets
/// through survives parsing: one image, automatic size and quality, PNG.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ImageRequest {
    /// The public model ID (or alias) the client asked for.
    pub model: String,
    /// What to draw.
    pub prompt: String,
    /// The client's end-user identifier, passed to the supplier as given.
    pub user: Option<String>,
}

/// What a supplier answered for one image, before the router has looked at
/// the bytes. A URL is downloaded by the router (under its URL rules);
/// bytes are validated as a PNG before anything is delivered or charged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GeneratedImage {
    /// The decoded bytes of a `b64_json` answer.
    Bytes(Vec<u8>),
    /// A `url` answer, to download.
    Url(String),
}

/// The supplier side of an image dialect. Object safe, like
/// [`crate::SupplierCodec`].
pub trait ImageSupplierCodec: Send + Sync + 'static {
    /// The protocol this codec speaks ([`Protocol::Images`]).
    fn protocol(&self) -> Protocol;

    /// The endpoint's path, appended to a supplier's base URL.
    fn path(&self) -> &'static str;

    /// The JSON body for the supplier; `upstream_model` is what the route
    /// calls the model.
    fn encode_request(
        &self,
        request: &ImageRequest,
        upstream_model: &str,
    ) -> Result<Vec<u8>, ApiError>;

    /// The authentication headers of one request.
    fn headers(&self, api_key: Option<&str>) -> Vec<(&'static str, String)>;

    /// Read a success reply: exactly one image, as bytes or a URL.
    fn decode_response(&self, body: &[u8]) -> Result<GeneratedImage, SupplierError>;

    /// Read an error reply (`status` is not 2xx) with its headers: always
    /// [`SupplierError::Reported`], with the `Retry-After` it asks for.
    fn decode_error(
        &self,
        status: u16,
        headers: &dyn crate::header::HeaderSource,
        body: &[u8],
    ) -> SupplierError;
}
