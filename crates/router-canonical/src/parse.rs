//! Path-tracking JSON parsing shared by the wire crates: a client's body read
//! through `serde_path_to_error`, so a rejection names the offending field
//! (`messages[3].content[0].type`) instead of "did not match any variant".
//!
//! Each wire crate keeps its own types and value rules; what lives here is the
//! plumbing they all need to report *where* a shape error happened:
//!
//! * [`request_body`]: deserialize a whole client body, turning a serde error
//!   into the 400 `invalid_parameter` a client sees ([`ApiError::param`] set
//!   to the path).
//! * [`ObjectVisitor`], [`tag`], [`optional_tag`] and [`typed`]: open-world
//!   dispatch on a buffered object's `type` that keeps the inner path of an
//!   error (serde's internally tagged enums lose it).
//! * [`nested_message`], `split_nested`, [`join_path`] and
//!   [`missing_field`]: the small path arithmetic behind both.
//! * [`StringOrSeq`]: the string-or-array member every protocol has
//!   (`content`, `stop`, `input`, ...), named per member by a [`SeqKind`].
//! * [`in_range`]: the numeric range rule every surface has.
//! * [`check_image_url`] and [`IMAGE_MEDIA_TYPES`]: the image URL rule of
//!   the OpenAI surfaces, and [`input_image_source`]: the `input_image`
//!   part rule Chat and Responses share.
//! * [`json_object`] and [`required_text`]: the first steps of the wire
//!   crates that read a body member by member (images, videos).

use crate::{ApiError, BodyExtensions, ErrorCode, ImageSource, Sampling, ToolChoice};
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, DeserializeOwned, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::error::Category;
use serde_json::{Map, Value};
use std::fmt;

/// Separates the inner path from the message in the error of a buffered object.
///
/// Open-world objects (content parts, blocks, items) are buffered and the
/// known variant is then deserialized from the buffer; the outer
/// `serde_path_to_error` tracker cannot see inside that second pass. The inner
/// deserializer therefore puts its path in the error message behind this
/// marker, and `split_nested` lets the caller join it to the outer path
/// (`messages[0].content[1]` + `image_url.url`).
const NESTED_MARK: char = '\u{1f}';

/// The message of a nested error that happened at `path` inside an object.
pub fn nested_message(path: &str, message: &str) -> String {
    format!("{NESTED_MARK}{path}{NESTED_MARK}{message}")
}

/// Undo [`nested_message`]: `(inner path, message)`, or `None` for a plain message.
pub(crate) fn split_nested(message: &str) -> Option<(&str, &str)> {
    let rest = message.strip_prefix(NESTED_MARK)?;
    rest.split_once(NESTED_MARK)
}

/// Join a `serde_path_to_error` path with a further segment (`.` is the root).
pub fn join_path(base: &str, segment: &str) -> String {
    match (base, segment) {
        ("." | "", s) => s.to_owned(),
        (b, "" | ".") => b.to_owned(),
        (b, s) if s.starts_with('[') => format!("{b}{s}"),
        (b, s) => format!("{b}.{s}"),
    }
}

/// The field named by serde's "missing field `x`" message.
pub fn missing_field(message: &str) -> Option<&str> {
    message.strip_prefix("missing field `")?.strip_suffix('`')
}

/// Deserialize a client's request body, rejecting trailing data.
///
/// Every failure is a 400 `invalid_parameter`: a syntax error says the body
/// is not valid JSON; a shape error names the path of the offending field
/// (including the inner path of a buffered object and the name of a missing
/// field) in `param`.
pub fn request_body<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let wire: T = serde_path_to_error::deserialize(&mut de).map_err(shape_error)?;
    de.end().map_err(|err| {
        ApiError::new(
            ErrorCode::InvalidParameter,
            format!("request body is not valid JSON: {err}"),
        )
    })?;
    Ok(wire)
}

/// Turn a serde error into the 400 a client sees.
fn shape_error(err: serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let path = err.path().to_string();
    let inner = err.into_inner();
    let text = inner.to_string();
    if !matches!(inner.classify(), Category::Data) {
        return ApiError::new(
            ErrorCode::InvalidParameter,
            format!("request body is not valid JSON: {text}"),
        );
    }
    // Data errors from a slice carry the position; the path says more.
    let position = format!(" at line {} column {}", inner.line(), inner.column());
    let message = text.strip_suffix(&position).unwrap_or(&text);
    let (param, message) = if let Some((inner_path, message)) = split_nested(message) {
        (join_path(&path, inner_path), message)
    } else if let Some(field) = missing_field(message) {
        (join_path(&path, field), message)
    } else {
        (join_path(&path, ""), message)
    };
    if param.is_empty() {
        return ApiError::new(
            ErrorCode::InvalidParameter,
            "request body must be a JSON object",
        );
    }
    ApiError::invalid(param.clone(), format!("invalid `{param}`: {message}"))
}

/// A client body that must be one JSON object: its members, or the 400
/// `invalid_parameter` saying it is not valid JSON or not an object.
pub fn json_object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::new(
            ErrorCode::InvalidParameter,
            format!("The request body is not valid JSON: {e}."),
        )
    })?;
    let Value::Object(object) = value else {
        return Err(ApiError::new(
            ErrorCode::InvalidParameter,
            "The request body must be a JSON object.",
        ));
    };
    Ok(object)
}

/// Member `name` of `object` as non-blank text; otherwise the 400 naming
/// it (`` `name` is required. ``, `` is empty. ``, `` must be a string. ``).
pub fn required_text(object: &Map<String, Value>, name: &str) -> Result<String, ApiError> {
    match object.get(name) {
        Some(Value::String(text)) if !text.trim().is_empty() => Ok(text.clone()),
        Some(Value::String(_)) => Err(ApiError::invalid(name, format!("`{name}` is empty."))),
        None | Some(Value::Null) => Err(ApiError::invalid(name, format!("`{name}` is required."))),
        Some(_) => Err(ApiError::invalid(
            name,
            format!("`{name}` must be a string."),
        )),
    }
}

/// `value` if it lies in `min..=max`; else a 400 naming `param`.
pub fn in_range(
    param: &str,
    value: Option<f64>,
    min: f64,
    max: f64,
) -> Result<Option<f64>, ApiError> {
    match value {
        Some(v) if !(min..=max).contains(&v) => Err(ApiError::invalid(
            param,
            format!("`{param}` must be between {min} and {max}, got {v}"),
        )),
        other => Ok(other),
    }
}

/// The sampling parameters of the OpenAI protocols (Chat, Responses,
/// legacy Completions), which share their ranges: `temperature` 0 to 2,
/// `top_p` 0 to 1, the penalties -2 to 2.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OpenAiSampling {
    /// Sampling temperature, 0 to 2.
    pub temperature: Option<f64>,
    /// Nucleus sampling mass, 0 to 1.
    pub top_p: Option<f64>,
    /// Penalty on repeated tokens, -2 to 2.
    pub frequency_penalty: Option<f64>,
    /// Penalty on present tokens, -2 to 2.
    pub presence_penalty: Option<f64>,
}

impl OpenAiSampling {
    /// The canonical sampling these make, or a 400 naming the first field
    /// out of its range.
    pub fn checked(self) -> Result<Sampling, ApiError> {
        Ok(Sampling {
            temperature: in_range("temperature", self.temperature, 0.0, 2.0)?,
            top_p: in_range("top_p", self.top_p, 0.0, 1.0)?,
            frequency_penalty: in_range("frequency_penalty", self.frequency_penalty, -2.0, 2.0)?,
            presence_penalty: in_range("presence_penalty", self.presence_penalty, -2.0, 2.0)?,
            ..Sampling::default()
        })
    }
}

/// An OpenAI `tool_choice` naming one tool: its `type` must be `function`;
/// `missing` is the protocol's own error for an absent name.
pub fn function_tool_choice(
    kind: &str,
    name: Option<String>,
    missing: impl FnOnce() -> ApiError,
) -> Result<ToolChoice, ApiError> {
    if kind != "function" {
        return Err(ApiError::invalid(
            "tool_choice.type",
            format!("tool_choice of type `{kind}` is not supported: use `function`"),
        ));
    }
    let name = name.ok_or_else(missing)?;
    Ok(ToolChoice::Tool { name })
}

/// The source of an `input_image` part `{image_url | file_id, detail?}`:
/// the Responses shape, also accepted on Chat, so both surfaces map it the
/// same way. Exactly one of `image_url` (a URL [`check_image_url`] accepts)
/// and `file_id` (an upload, resolved later); `path` names the part, and
/// `extensions` judges a web URL ([`BodyExtensions::check_image_url`]).
pub fn input_image_source(
    path: &str,
    image_url: Option<String>,
    file_id: Option<String>,
    extensions: &dyn BodyExtensions,
) -> Result<ImageSource, ApiError> {
    match (image_url, file_id) {
        (Some(url), None) => {
            check_image_url(&format!("{path}.image_url"), &url, extensions)?;
            Ok(ImageSource::Url { url })
        }
        (None, Some(file_id)) => Ok(ImageSource::Upload {
            file_id,
            param: format!("{path}.file_id"),
        }),
        (Some(_), Some(_)) => Err(ApiError::invalid(
            path,
            "an input_image part takes `image_url` or `file_id`, not both",
        )),
        (None, None) => Err(ApiError::invalid(
            format!("{path}.image_url"),
            "an input_image part needs `image_url` or `file_id`",
        )),
    }
}

/// Image MIME types accepted in base64 sources and `data:` URLs on the
/// OpenAI surfaces.
pub const IMAGE_MEDIA_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// An image URL on an OpenAI surface: `https:` or `http:` (as
/// `extensions` judges it: [`BodyExtensions::check_image_url`]), or a
/// base64 `data:` URL of one of [`IMAGE_MEDIA_TYPES`]; else a 400 naming
/// `param`.
pub fn check_image_url(
    param: &str,
    url: &str,
    extensions: &dyn BodyExtensions,
) -> Result<(), ApiError> {
    fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
        let head = s.get(..prefix.len())?;
        head.eq_ignore_ascii_case(prefix)
            .then(|| &s[prefix.len()..])
    }
    if strip_prefix_ci(url, "https://").is_some() || strip_prefix_ci(url, "http://").is_some() {
        return extensions.check_image_url(param, url);
    }
    if let Some(rest) = strip_prefix_ci(url, "data:")
        && let Some((media_type, _)) = rest.split_once(";base64,")
        && IMAGE_MEDIA_TYPES
            .iter()
            .any(|t| t.eq_ignore_ascii_case(media_type))
    {
        return Ok(());
    }
    Err(ApiError::invalid(
        param,
        "an image URL must be https:, http:, or a base64 data: URL of a JPEG, PNG, GIF or WebP image",
    ))
}

/// An `http(s)` image URL that names a public host by the same rules as
/// video references ([`crate::public_host::public_url`]); else a 400
/// naming `param`. Not applied by the codecs themselves: a gateway that
/// forwards image URLs to suppliers, which fetch them, calls it from its
/// [`BodyExtensions::check_image_url`], so that a private or metadata
/// address cannot make a supplier (or a self-hosted model server next to
/// the gateway) fetch it.
pub fn public_http_image_url(param: &str, url: &str) -> Result<(), ApiError> {
    crate::public_host::public_url(url).map_err(|why| {
        ApiError::invalid(
            param,
            format!("an image URL must be a publicly reachable http(s) URL: {why}"),
        )
    })
}

/// A base64 image source at `path`: its media type must be one of
/// [`IMAGE_MEDIA_TYPES`] (else a 400 naming `{path}.source.media_type`).
pub fn base64_image(path: &str, media_type: String, data: String) -> Result<ImageSource, ApiError> {
    if !IMAGE_MEDIA_TYPES.contains(&media_type.as_str()) {
        return Err(ApiError::invalid(
            format!("{path}.source.media_type"),
            format!(
                "image media type `{media_type}` is not supported: use image/jpeg, image/png, image/gif or image/webp"
            ),
        ));
    }
    Ok(ImageSource::Base64 { media_type, data })
}

/// Buffers one JSON object (for open-world dispatch on its `type`); the
/// string is what serde reports was expected instead.
pub struct ObjectVisitor(pub &'static str);

impl<'de> Visitor<'de> for ObjectVisitor {
    type Value = Map<String, Value>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Map::deserialize(MapAccessDeserializer::new(map))
    }
}

/// The `type` member of a buffered object that must have one (`null` is a
/// wrong type, absence a missing field).
pub fn tag<E: de::Error>(map: &Map<String, Value>) -> Result<&str, E> {
    match map.get("type") {
        Some(Value::String(kind)) => Ok(kind),
        Some(_) => Err(wrong_tag_type()),
        None => Err(E::missing_field("type")),
    }
}

/// The `type` member of a buffered object, if it has one (`null` reads as absent).
pub fn optional_tag<E: de::Error>(map: &Map<String, Value>) -> Result<Option<&str>, E> {
    match map.get("type") {
        Some(Value::String(kind)) => Ok(Some(kind)),
        None | Some(Value::Null) => Ok(None),
        Some(_) => Err(wrong_tag_type()),
    }
}

fn wrong_tag_type<E: de::Error>() -> E {
    E::custom(nested_message("type", "invalid type: expected a string"))
}

/// Deserialize a known variant from its buffered object, keeping the inner
/// path (also across several levels of buffering).
pub fn typed<T: DeserializeOwned, E: de::Error>(map: Map<String, Value>) -> Result<T, E> {
    serde_path_to_error::deserialize(Value::Object(map)).map_err(|err| {
        let path = err.path().to_string();
        let message = err.into_inner().to_string();
        if let Some((inner, message)) = split_nested(&message) {
            return E::custom(nested_message(&join_path(&path, inner), message));
        }
        match missing_field(&message) {
            Some(field) => E::custom(nested_message(&join_path(&path, field), &message)),
            None => E::custom(nested_message(&path, &message)),
        }
    })
}

/// A JSON value that is one string or an array of elements (`content`,
/// `stop`, `prompt`, `system`, `input` in the various protocols): the one
/// type every wire crate uses for the pattern. `K` names the member: its
/// element type and what a client is told was expected instead; a wire
/// crate gives it a name with a type alias
/// (`type Content = StringOrSeq<ContentKind>`).
pub enum StringOrSeq<K: SeqKind> {
    /// The string form.
    Text(String),
    /// The array form.
    Seq(Vec<K::Element>),
}

/// One string-or-array member of a protocol: see [`StringOrSeq`]. Usually
/// an uninhabited enum, only ever used as a type.
pub trait SeqKind {
    /// The array's element type.
    type Element;
    /// What serde reports was expected instead ("a string or an array of
    /// content blocks").
    const EXPECTING: &'static str;
}

impl<K: SeqKind> fmt::Debug for StringOrSeq<K>
where
    K::Element: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StringOrSeq::Text(text) => f.debug_tuple("Text").field(text).finish(),
            StringOrSeq::Seq(all) => f.debug_tuple("Seq").field(all).finish(),
        }
    }
}

impl<K: SeqKind> Clone for StringOrSeq<K>
where
    K::Element: Clone,
{
    fn clone(&self) -> Self {
        match self {
            StringOrSeq::Text(text) => StringOrSeq::Text(text.clone()),
            StringOrSeq::Seq(all) => StringOrSeq::Seq(all.clone()),
        }
    }
}

impl<K: SeqKind> PartialEq for StringOrSeq<K>
where
    K::Element: PartialEq,
{
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (StringOrSeq::Text(a), StringOrSeq::Text(b)) => a == b,
            (StringOrSeq::Seq(a), StringOrSeq::Seq(b)) => a == b,
            _ => false,
        }
    }
}

impl<K: SeqKind> Eq for StringOrSeq<K> where K::Element: Eq {}

impl<K: SeqKind> Serialize for StringOrSeq<K>
where
    K::Element: Serialize,
{
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            StringOrSeq::Text(text) => s.serialize_str(text),
            StringOrSeq::Seq(all) => all.serialize(s),
        }
    }
}

/// Elements are read through the caller's deserializer, so a path tracker
/// sees their index.
impl<'de, K: SeqKind> Deserialize<'de> for StringOrSeq<K>
where
    K::Element: Deserialize<'de>,
{
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StringOrSeqVisitor<K>(std::marker::PhantomData<K>);
        impl<'de, K: SeqKind> Visitor<'de> for StringOrSeqVisitor<K>
        where
            K::Element: Deserialize<'de>,
        {
            type Value = StringOrSeq<K>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(K::EXPECTING)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(StringOrSeq::Text(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(StringOrSeq::Text(v))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                // A hostile size hint must not reserve unbounded memory.
                let mut all = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
                while let Some(element) = seq.next_element::<K::Element>()? {
                    all.push(element);
                }
                Ok(StringOrSeq::Seq(all))
            }
        }
        deserializer.deserialize_any(StringOrSeqVisitor::<K>(std::marker::PhantomData))
    }
}

/// The documented shape of a [`StringOrSeq`] member (feature `openapi`):
/// one string, or an array of its elements.
#[cfg(feature = "openapi")]
pub trait SeqSchema: SeqKind {
    /// The component name (`ChatMessageContent`).
    const NAME: &'static str;
    /// The component's description.
    const DESCRIPTION: &'static str;
    /// The schema of one element of the array.
    fn element() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>;
    /// The named schemas [`SeqSchema::element`] refers to (see [`register`](crate::openapi::register)).
    fn schemas(out: &mut crate::openapi::Schemas) {
        let _ = out;
    }
}

#[cfg(feature = "openapi")]
impl<K: SeqSchema> utoipa::PartialSchema for StringOrSeq<K> {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use crate::openapi::{array_of, one_of, string};
        one_of([string(), array_of(K::element())], K::DESCRIPTION)
    }
}

#[cfg(feature = "openapi")]
impl<K: SeqSchema> utoipa::ToSchema for StringOrSeq<K> {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed(K::NAME)
    }
    fn schemas(out: &mut crate::openapi::Schemas) {
        K::schemas(out);
    }
}

/// Declare a protocol's string-or-array member: its name (an alias of
/// [`StringOrSeq`]), its [`SeqKind`]
/// and, with the calling crate's `openapi` feature, its `SeqSchema`.
///
/// ```text
/// router_canonical::string_or_seq! {
///     /// `content`: a string or an array of blocks.
///     pub type Content = StringOrSeq<ContentKind> of ContentBlock;
///     expecting "a string or an array of content blocks";
///     schema "MessagesContent", "A string, or an array of content blocks.",
///         element router_canonical::openapi::reference::<ContentBlock>(), uses [ContentBlock];
/// }
/// ```
#[macro_export]
macro_rules! string_or_seq {
    (
        $(#[$meta:meta])*
        $vis:vis type $alias:ident = StringOrSeq<$kind:ident> of $element:ty;
        expecting $expecting:literal;
        schema $name:literal, $description:literal, element $schema:expr, uses [$($dep:ty),* $(,)?];
    ) => {
        $(#[$meta])*
        $vis type $alias = $crate::parse::StringOrSeq<$kind>;

        #[doc = concat!("What [`", stringify!($alias), "`] holds: its element and what a client is told was expected.")]
        #[derive(Debug)]
        $vis enum $kind {}

        impl $crate::parse::SeqKind for $kind {
            type Element = $element;
            const EXPECTING: &'static str = $expecting;
        }

        #[cfg(feature = "openapi")]
        impl $crate::parse::SeqSchema for $kind {
            const NAME: &'static str = $name;
            const DESCRIPTION: &'static str = $description;
            fn element() -> ::utoipa::openapi::RefOr<::utoipa::openapi::schema::Schema> {
                $schema
            }
            fn schemas(out: &mut $crate::openapi::Schemas) {
                let _ = &out;
                $($crate::openapi::register::<$dep>(out);)*
            }
        }
    };
}

/// A supplier reply that is not JSON of the expected shape: where, and what.
/// `path` is `.` for the root.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid supplier JSON at `{path}`: {message}")]
pub struct InvalidJson {
    /// Where in the reply (`.` for the root).
    pub path: String,
    /// What is wrong there.
    pub message: String,
}

impl From<serde_path_to_error::Error<serde_json::Error>> for InvalidJson {
    /// Keeps the inner path of a buffered object (see `split_nested`).
    fn from(err: serde_path_to_error::Error<serde_json::Error>) -> Self {
        let path = err.path().to_string();
        let message = err.into_inner().to_string();
        match split_nested(&message) {
            Some((inner, message)) => InvalidJson {
                path: join_path(&path, inner),
                message: message.to_owned(),
            },
            None => InvalidJson { path, message },
        }
    }
}

/// Serialize a wire value to JSON bytes, or `fallback` should that fail.
///
/// Serializing the wire types cannot fail: every map key is a string and no
/// `Serialize` impl in them returns an error. Should that ever change, the
/// caller's fallback (a well-formed error envelope of its protocol) is sent
/// rather than a panic.
pub fn to_json_bytes_or<T: Serialize>(value: &T, fallback: &[u8]) -> Vec<u8> {
    match serde_json::to_vec(value) {
        Ok(bytes) => bytes,
        Err(_) => fallback.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_or_seq_reads_either_and_names_the_element() {
        enum Bytes {}
        impl SeqKind for Bytes {
            type Element = u8;
            const EXPECTING: &'static str = "a string or an array of bytes";
        }
        fn read(json: &str) -> Result<StringOrSeq<Bytes>, String> {
            let mut de = serde_json::Deserializer::from_str(json);
            serde_path_to_error::deserialize(&mut de)
                .map_err(|e| format!("{} @ {}", e.inner(), e.path()))
        }
        assert_eq!(read(r#""hi""#).unwrap(), StringOrSeq::Text("hi".into()));
        assert_eq!(read("[1, 2]").unwrap(), StringOrSeq::Seq(vec![1, 2]));
        let err = read("[1, \"x\"]").unwrap_err();
        assert!(err.ends_with("@ [1]"), "{err}");
        let err = read("5").unwrap_err();
        assert!(
            err.contains("expected a string or an array of bytes"),
            "{err}"
        );
        let written = serde_json::to_string(&StringOrSeq::<Bytes>::Seq(vec![1])).unwrap();
        assert_eq!(written, "[1]");
        let written = serde_json::to_string(&StringOrSeq::<Bytes>::Text("a".into())).unwrap();
        assert_eq!(written, r#""a""#);
    }

    /// One `input_image` rule for Chat and Responses.
    #[test]
    fn an_input_image_has_exactly_one_source() {
        let p = "input[0].content[1]";
        let url = || Some("https://img.example/a.png".to_owned());
        let file = || Some("file-1".to_owned());
        assert_eq!(
            input_image_source(p, url(), None, &()).unwrap(),
            ImageSource::Url {
                url: "https://img.example/a.png".into()
            }
        );
        assert_eq!(
            input_image_source(p, None, file(), &()).unwrap(),
            ImageSource::Upload {
                file_id: "file-1".into(),
                param: format!("{p}.file_id"),
            }
        );
        let both = input_image_source(p, url(), file(), &()).unwrap_err();
        assert_eq!(both.param.as_deref(), Some(p));
        let neither = input_image_source(p, None, None, &()).unwrap_err();
        assert_eq!(
            neither.param.as_deref(),
            Some("input[0].content[1].image_url")
        );
        let ftp = input_image_source(p, Some("ftp://x".into()), None, &()).unwrap_err();
        assert_eq!(ftp.param.as_deref(), Some("input[0].content[1].image_url"));
    }

    #[test]
    fn invalid_json_joins_the_nested_path() {
        #[derive(Debug, Deserialize)]
        struct Outer {
            #[expect(dead_code, reason = "only the error is looked at")]
            inner: Vec<u8>,
        }
        let mut de = serde_json::Deserializer::from_str(r#"{"inner": [1, "x"]}"#);
        let err = serde_path_to_error::deserialize::<_, Outer>(&mut de).unwrap_err();
        let error = InvalidJson::from(err);
        assert_eq!(error.path, "inner[1]");
    }

    #[test]
    fn nested_messages_round_trip() {
        let m = nested_message("image_url.url", "invalid type");
        assert_eq!(split_nested(&m), Some(("image_url.url", "invalid type")));
        assert_eq!(split_nested("invalid type"), None);
        // The shapes the wire crates nest: a Messages image source, a
        // Responses part inside an input item.
        let m = nested_message("source.url", "invalid type");
        assert_eq!(split_nested(&m), Some(("source.url", "invalid type")));
        let m = nested_message("content[0].text", "invalid type");
        assert_eq!(split_nested(&m), Some(("content[0].text", "invalid type")));
        assert_eq!(split_nested("plain"), None);
    }

    #[test]
    fn paths_join() {
        assert_eq!(join_path(".", "model"), "model");
        assert_eq!(join_path("tools[0]", "type"), "tools[0].type");
        assert_eq!(join_path("messages[0]", "[1]"), "messages[0][1]");
        assert_eq!(join_path("messages[0].content", ""), "messages[0].content");
        assert_eq!(
            join_path("input[0]", "content[1].text"),
            "input[0].content[1].text"
        );
        assert_eq!(join_path("input", "[0]"), "input[0]");
        assert_eq!(join_path("tools[2]", ""), "tools[2]");
        assert_eq!(join_path(".", "prompt"), "prompt");
        assert_eq!(join_path("stop", "[1]"), "stop[1]");
        assert_eq!(
            join_path("stream_options", "include_usage"),
            "stream_options.include_usage"
        );
    }

    #[test]
    fn missing_field_is_read_from_serde_message() {
        assert_eq!(missing_field("missing field `role`"), Some("role"));
        assert_eq!(missing_field("missing field `model`"), Some("model"));
        assert_eq!(missing_field("invalid type"), None);
    }

    #[test]
    fn range_bounds_are_inclusive() {
        assert_eq!(in_range("t", Some(2.0), 0.0, 2.0).unwrap(), Some(2.0));
        assert_eq!(in_range("t", None, 0.0, 2.0).unwrap(), None);
        let err = in_range("t", Some(1.5), 0.0, 1.0).unwrap_err();
        assert_eq!(err.param.as_deref(), Some("t"));
        assert_eq!(err.message, "`t` must be between 0 and 1, got 1.5");
    }

    /// A gateway's rule for web image URLs: public hosts only.
    struct PublicImages;

    impl BodyExtensions for PublicImages {
        fn take(&mut self, _: &mut Map<String, Value>) -> Result<(), ApiError> {
            Ok(())
        }
        fn check_image_url(&self, param: &str, url: &str) -> Result<(), ApiError> {
            public_http_image_url(param, url)
        }
    }

    #[test]
    fn image_urls_are_web_or_base64_images() {
        let check = |param, url| check_image_url(param, url, &PublicImages);
        assert!(check("u", "HTTPS://img.example/a.png").is_ok());
        // Issue 33: a URL the supplier would fetch names a public host.
        let private = [
            "http://127.0.0.1/a.png",
            "http://127.0.0.1/a.png",
            "http://169.254.169.254/latest/meta-data",
            "https://[::ffff:10.0.0.1]/a.png",
            "https://[2002:7f00:1::]/a.png",
            "http://2130706433/a.png",
            "http://localhost/a.png",
            "http://metadata/computeMetadata/v1/",
            "https://user:pw@img.example/a.png",
        ];
        for url in private {
            let err = check("u", url).unwrap_err();
            assert_eq!(err.param.as_deref(), Some("u"), "{url}");
            // The codecs' own rule is the protocol's: any web URL (issue 31).
            assert_eq!(check_image_url("u", url, &()), Ok(()), "{url}");
        }
        assert!(check("u", "data:image/PNG;base64,iVBORw0KGgo=").is_ok());
        assert!(check("u", "data:image/bmp;base64,Qk0=").is_err());
        let err = check("u", "ftp://x/a.png").unwrap_err();
        assert_eq!(err.param.as_deref(), Some("u"));
        assert!(check_image_url("u", "ftp://x/a.png", &()).is_err());
    }

    #[test]
    fn request_body_names_the_path() {
        #[derive(Debug, serde::Deserialize)]
        #[expect(dead_code, reason = "only the error is looked at")]
        struct Body {
            model: String,
        }
        let err = request_body::<Body>(b"{}").unwrap_err();
        assert_eq!(err.param.as_deref(), Some("model"));
        let err = request_body::<Body>(br#"{"model": 5}"#).unwrap_err();
        assert_eq!(err.param.as_deref(), Some("model"));
        let err = request_body::<Body>(b"{").unwrap_err();
        assert_eq!(err.param, None);
        let err = request_body::<Body>(br#"{"model": "m"} x"#).unwrap_err();
        assert_eq!(err.param, None);
    }
}
