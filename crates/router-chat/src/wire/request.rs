//! The body of `POST /v1/chat/completions`: what a client sends, and what is
//! sent on to a Chat supplier.
//!
//! Types here check JSON *shape* only (serde reports the path of a wrong
//! type); value rules (ranges, conflicts, required fields, unsupported media)
//! live in the client parser so every rejection names its parameter the same way.

use router_canonical::parse::{ObjectVisitor, nested_message, tag, typed};
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::fmt;

/// A Chat Completions request body.
///
/// `model` and `messages` are `Option` so that their absence is reported by
/// the validator with `param` set, like every other rule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(as = ChatRequest, description = "A Chat Completions request. Fields not listed are accepted and passed on to Chat routes where vetted.")
)]
#[serde(default, expecting = "a JSON object")]
pub struct ChatRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(required = true, nullable = false))]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(required = true, nullable = false, min_items = 1)
    )]
    pub messages: Option<Vec<ChatMessage>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolDefinition>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop: Option<Stop>,
    /// Deprecated by OpenAI in favour of `max_completion_tokens`; accepted inbound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// `reasoning: {effort}` (OpenAI-compatible gateways); `null` means omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningParam>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modalities: Option<Vec<String>>,
    /// Audio output parameters; only its presence matters (always rejected).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audio: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Every other top-level property (accepted; only the vetted Chat-native
    /// ones are kept for Chat suppliers).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatRole))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ChatRole {
    System,
    Developer,
    User,
    Assistant,
    Tool,
}

/// One message of `messages`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatMessage))]
pub struct ChatMessage {
    pub role: ChatRole,
    /// `None` for both an absent and a `null` content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<MessageContent>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ChatMessage {
    pub fn new(role: ChatRole) -> Self {
        ChatMessage {
            role,
            content: None,
            name: None,
            tool_call_id: None,
            tool_calls: None,
            extra: Map::new(),
        }
    }
}

router_canonical::string_or_seq! {
    /// `content`: a string or an array of parts (`null` is the `None` around it).
    pub type MessageContent = StringOrSeq<MessageContentKind> of ContentPart;
    expecting "a string, null, or an array of content parts";
    schema "ChatMessageContent", "A string, or an array of content parts.",
        element router_canonical::openapi::reference::<ContentPart>(), uses [ContentPart];
}

/// One content part. Known image and text parts are typed; any other `type`
/// is kept whole in `Unknown` (media types are rejected by the validator,
/// everything else passes through to Chat suppliers unchanged).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ContentPart {
    Text(TextPart),
    ImageUrl(ImageUrlPart),
    InputImage(InputImagePart),
    Image(ImagePart),
    Unknown(Value),
}

impl ContentPart {
    /// The `type` of the part.
    pub fn kind(&self) -> &str {
        match self {
            ContentPart::Text(_) => "text",
            ContentPart::ImageUrl(_) => "image_url",
            ContentPart::InputImage(_) => "input_image",
            ContentPart::Image(_) => "image",
            ContentPart::Unknown(value) => value.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatTextPart))]
pub struct TextPart {
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// `{type: "image_url", image_url: {url, detail?}}` (or a bare URL string).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatImageUrlPart))]
pub struct ImageUrlPart {
    pub image_url: ImageUrl,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// `{type: "input_image", image_url? | file_id?, detail?}` (Responses style).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatInputImagePart))]
pub struct InputImagePart {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_url: Option<ImageUrl>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// `{type: "image", source: {...}}` (Anthropic style, accepted on Chat).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatImagePart))]
pub struct ImagePart {
    pub source: ImageSource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatImageSource))]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ImageSource {
    Base64 { media_type: String, data: String },
    Url { url: String },
    File { file_id: String },
}

/// `image_url`: `{url, detail?}`, or a bare URL string on input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatImageUrl))]
pub struct ImageUrl {
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl<'de> Deserialize<'de> for ImageUrl {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Object {
            url: String,
            #[serde(default)]
            detail: Option<String>,
        }
        struct UrlVisitor;
        impl<'de> Visitor<'de> for UrlVisitor {
            type Value = ImageUrl;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a URL string or an object with `url`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(ImageUrl {
                    url: v.to_owned(),
                    detail: None,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let Object { url, detail } = Object::deserialize(MapAccessDeserializer::new(map))?;
                Ok(ImageUrl { url, detail })
            }
        }
        d.deserialize_any(UrlVisitor)
    }
}

/// A prompt-cache marker on a part or tool (`{type: "ephemeral", ttl?}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatCacheControl))]
pub struct CacheControl {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<String>,
}

impl Serialize for ContentPart {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Tagged<'a> {
            Text(&'a TextPart),
            ImageUrl(&'a ImageUrlPart),
            InputImage(&'a InputImagePart),
            Image(&'a ImagePart),
        }
        match self {
            ContentPart::Text(p) => Tagged::Text(p).serialize(s),
            ContentPart::ImageUrl(p) => Tagged::ImageUrl(p).serialize(s),
            ContentPart::InputImage(p) => Tagged::InputImage(p).serialize(s),
            ContentPart::Image(p) => Tagged::Image(p).serialize(s),
            ContentPart::Unknown(value) => value.serialize(s),
        }
    }
}

#[cfg(feature = "openapi")]
router_canonical::impl_to_schema!(
    ContentPart as "ChatContentPart",
    uses [TextPart, ImageUrlPart, InputImagePart, ImagePart],
    {
        use router_canonical::openapi::{any_of, object, tagged};
        any_of(
            [
                tagged::<TextPart>("text"),
                tagged::<ImageUrlPart>("image_url"),
                tagged::<InputImagePart>("input_image"),
                tagged::<ImagePart>("image"),
                object("Another part, passed through to Chat suppliers unchanged (media parts are refused)."),
            ],
            "A content part, keyed by `type`.",
        )
    }
);

impl<'de> Deserialize<'de> for ContentPart {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = d.deserialize_map(ObjectVisitor("a content part object"))?;
        match tag(&map)? {
            "text" => typed(map).map(ContentPart::Text),
            "image_url" => typed(map).map(ContentPart::ImageUrl),
            "input_image" => typed(map).map(ContentPart::InputImage),
            "image" => typed(map).map(ContentPart::Image),
            _ => Ok(ContentPart::Unknown(Value::Object(map))),
        }
    }
}

/// A tool call in an assistant message (request history or supplier reply).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatToolCall))]
pub struct ToolCall {
    pub id: String,
    /// Always `function` for the tools this crate supports; a missing `type`
    /// is read as `function`.
    #[serde(rename = "type", default = "function_kind")]
    pub kind: String,
    pub function: FunctionCall,
}

pub(crate) fn function_kind() -> String {
    "function".to_owned()
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatFunctionCall))]
pub struct FunctionCall {
    pub name: String,
    /// JSON text as the model produced it; never reparsed.
    pub arguments: String,
}

/// An entry of `tools`. Only `type: "function"` is supported; hosted tool
/// types are kept in the shape they came in so the validator can name them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatToolDefinition))]
pub struct ToolDefinition {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<FunctionDefinition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatFunctionDefinition))]
pub struct FunctionDefinition {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

/// `tool_choice`: a mode string or `{type: "function", function: {name}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatToolChoice))]
#[serde(untagged)]
pub enum ToolChoice {
    Mode(ToolChoiceMode),
    Named(NamedToolChoice),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatToolChoiceMode))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolChoiceMode {
    Auto,
    None,
    Required,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatNamedToolChoice))]
pub struct NamedToolChoice {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<FunctionName>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatFunctionName))]
pub struct FunctionName {
    pub name: String,
}

impl<'de> Deserialize<'de> for ToolChoice {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ChoiceVisitor;
        impl<'de> Visitor<'de> for ChoiceVisitor {
            type Value = ToolChoice;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("`auto`, `none`, `required` or a tool choice object")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                let de: de::value::StrDeserializer<'_, E> = v.into_deserializer();
                ToolChoiceMode::deserialize(de).map(ToolChoice::Mode)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                NamedToolChoice::deserialize(MapAccessDeserializer::new(map)).map(ToolChoice::Named)
            }
        }
        d.deserialize_any(ChoiceVisitor)
    }
}

/// `response_format`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatResponseFormat))]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ResponseFormat {
    Text,
    JsonObject,
    JsonSchema { json_schema: JsonSchemaFormat },
}

/// Buffered like a content part, so an error inside `json_schema` keeps its
/// path (serde's internally tagged enums lose it).
impl<'de> Deserialize<'de> for ResponseFormat {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct JsonSchemaVariant {
            json_schema: JsonSchemaFormat,
        }
        let map = d.deserialize_map(ObjectVisitor(
            "a response format object with `type` text, json_object or json_schema",
        ))?;
        match tag(&map)? {
            "text" => Ok(ResponseFormat::Text),
            "json_object" => Ok(ResponseFormat::JsonObject),
            "json_schema" => typed(map).map(|v: JsonSchemaVariant| ResponseFormat::JsonSchema {
                json_schema: v.json_schema,
            }),
            other => Err(de::Error::custom(nested_message(
                "type",
                &format!(
                    "unknown variant `{other}`, expected one of `text`, `json_object`, `json_schema`"
                ),
            ))),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatJsonSchemaFormat))]
pub struct JsonSchemaFormat {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Optional in OpenAI's reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

/// `thinking` (Anthropic-style, accepted by several Chat suppliers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatThinking))]
pub struct Thinking {
    #[serde(rename = "type")]
    pub kind: ThinkingType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatThinkingType))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ThinkingType {
    Enabled,
    Disabled,
    Adaptive,
}

/// `reasoning: {effort}`; other members are ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatReasoningParam))]
pub struct ReasoningParam {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

router_canonical::string_or_seq! {
    /// `stop`: one string or an array of strings (`null` is the `None` around it).
    pub type Stop = StringOrSeq<StopKind> of String;
    expecting "a string, an array of strings, or null";
    schema "ChatStop", "`stop`: one string or an array of strings (`null` is the `None` around it).",
        element router_canonical::openapi::string(), uses [];
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatStreamOptions))]
pub struct StreamOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_usage: Option<bool>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
