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
    /// The model to use (`model`); required.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(required = true, nullable = false))]
    pub model: Option<String>,
    /// The conversation so far (`messages`); required, at least one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(required = true, nullable = false, min_items = 1)
    )]
    pub messages: Option<Vec<ChatMessage>>,
    /// The functions the model may call (`tools`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolDefinition>>,
    /// Whether and which tool the model must call (`tool_choice`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Whether the model may call several tools in one turn (`parallel_tool_calls`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// The reply's format: text, any JSON object, or JSON to a schema (`response_format`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    /// Sampling temperature, 0 to 2 (`temperature`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling mass, 0 to 1 (`top_p`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Penalty on tokens by how often they appeared, -2 to 2 (`frequency_penalty`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f64>,
    /// Penalty on tokens that appeared at all, -2 to 2 (`presence_penalty`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f64>,
    /// A seed for best-effort deterministic sampling (`seed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// Up to four sequences that end generation (`stop`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop: Option<Stop>,
    /// Deprecated by OpenAI in favour of `max_completion_tokens`; accepted inbound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// The cap on generated tokens, reasoning included (`max_completion_tokens`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<u32>,
    /// How hard a reasoning model thinks: `minimal`, `low`, `medium`, `high` (`reasoning_effort`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// `reasoning: {effort}` (OpenAI-compatible gateways); `null` means omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningParam>,
    /// Extended thinking, Anthropic style (`thinking`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Thinking>,
    /// How many choices to generate (`n`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n: Option<u32>,
    /// The output kinds wanted, such as `["text"]` (`modalities`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modalities: Option<Vec<String>>,
    /// Audio output parameters; only its presence matters (always rejected).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audio: Option<Value>,
    /// Whether to stream the reply as server-sent events (`stream`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Options of a streamed reply (`stream_options`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    /// An identifier of the end user, passed on for abuse monitoring (`user`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Every other top-level property (accepted; only the vetted Chat-native
    /// ones are kept for Chat suppliers).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Who wrote a message (`role`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatRole))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ChatRole {
    /// `system`: instructions from the application.
    System,
    /// `developer`: instructions from the application (the newer name for `system`).
    Developer,
    /// `user`: the end user.
    User,
    /// `assistant`: the model, earlier in the conversation.
    Assistant,
    /// `tool`: a tool's result, answering `tool_call_id`.
    Tool,
}

/// One message of `messages`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatMessage))]
pub struct ChatMessage {
    /// Who wrote the message.
    pub role: ChatRole,
    /// `None` for both an absent and a `null` content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<MessageContent>,
    /// A name telling participants of the same role apart (`name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// On a `tool` message: the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// On an `assistant` message: the tool calls the model made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// Every other member of the message, kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ChatMessage {
    /// A message of `role` with no content or other members.
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
/// is kept whole in `Unknown`, for the client codec to judge: an assistant
/// message's `refusal` part passes through to Chat suppliers unchanged,
/// every other type (media or unknown) is refused naming its `type`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ContentPart {
    /// `{type: "text", text}`.
    Text(TextPart),
    /// `{type: "image_url", image_url}`.
    ImageUrl(ImageUrlPart),
    /// `{type: "input_image", ...}` (Responses style).
    InputImage(InputImagePart),
    /// `{type: "image", source}` (Anthropic style).
    Image(ImagePart),
    /// Any other part, kept whole.
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

/// `{type: "text", text}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatTextPart))]
pub struct TextPart {
    /// The text.
    pub text: String,
    /// A prompt-cache breakpoint after this part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// `{type: "image_url", image_url: {url, detail?}}` (or a bare URL string).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatImageUrlPart))]
pub struct ImageUrlPart {
    /// The image's URL and detail level.
    pub image_url: ImageUrl,
    /// A prompt-cache breakpoint after this part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// `{type: "input_image", image_url? | file_id?, detail?}` (Responses style).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatInputImagePart))]
pub struct InputImagePart {
    /// The image's URL (`https:` or `data:`), when not a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_url: Option<ImageUrl>,
    /// An uploaded file's id, when not a URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_id: Option<String>,
    /// `low`, `high` or `auto`: the resolution the model sees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// A prompt-cache breakpoint after this part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// `{type: "image", source: {...}}` (Anthropic style, accepted on Chat).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatImagePart))]
pub struct ImagePart {
    /// Where the image comes from.
    pub source: ImageSource,
    /// A prompt-cache breakpoint after this part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// `source` of an Anthropic-style image part, keyed by `type`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatImageSource))]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ImageSource {
    /// `{type: "base64", media_type, data}`: the image inline.
    Base64 {
        /// The image's MIME type, such as `image/png`.
        media_type: String,
        /// The image bytes, base64-encoded.
        data: String,
    },
    /// `{type: "url", url}`: an image the supplier fetches.
    Url {
        /// An `https:` or `data:` URL.
        url: String,
    },
    /// `{type: "file", file_id}`: an image uploaded to the supplier's Files API.
    File {
        /// The supplier's file id.
        file_id: String,
    },
}

/// `image_url`: `{url, detail?}`, or a bare URL string on input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatImageUrl))]
pub struct ImageUrl {
    /// An `https:` or `data:` URL.
    pub url: String,
    /// `low`, `high` or `auto`: the resolution the model sees.
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
    /// `ephemeral`, the only kind.
    #[serde(rename = "type")]
    pub kind: String,
    /// How long the entry lives, such as `5m` or `1h`.
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
                object("`{type: \"refusal\", refusal}` in an assistant message, passed through to Chat suppliers unchanged; other types are refused."),
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
    /// The call's id, quoted by the `tool` message that answers it.
    pub id: String,
    /// Always `function` for the tools this crate supports; a missing `type`
    /// is read as `function`.
    #[serde(rename = "type", default = "function_kind")]
    pub kind: String,
    /// The function called and its arguments.
    pub function: FunctionCall,
}

pub(crate) fn function_kind() -> String {
    "function".to_owned()
}

/// `function` of a tool call: which function, with what arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatFunctionCall))]
pub struct FunctionCall {
    /// The function's name.
    pub name: String,
    /// JSON text as the model produced it; never reparsed.
    pub arguments: String,
}

/// An entry of `tools`. Only `type: "function"` is supported; hosted tool
/// types are kept in the shape they came in so the validator can name them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatToolDefinition))]
pub struct ToolDefinition {
    /// The tool's `type`: `function`, or a hosted tool's name (refused).
    #[serde(rename = "type")]
    pub kind: String,
    /// The function's definition, for `type: "function"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<FunctionDefinition>,
    /// A prompt-cache breakpoint after this tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
    /// Every other member of the entry, kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `function` of a tool: what the model sees of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatFunctionDefinition))]
pub struct FunctionDefinition {
    /// The name the model calls it by.
    pub name: String,
    /// What the function does, for the model to decide when to call it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments' JSON Schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
    /// Whether the arguments must follow the schema exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

/// `tool_choice`: a mode string or `{type: "function", function: {name}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatToolChoice))]
#[serde(untagged)]
pub enum ToolChoice {
    /// `auto`, `none` or `required`.
    Mode(ToolChoiceMode),
    /// One function by name.
    Named(NamedToolChoice),
}

/// The string forms of `tool_choice`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatToolChoiceMode))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolChoiceMode {
    /// `auto`: the model decides.
    Auto,
    /// `none`: no tool call.
    None,
    /// `required`: at least one tool call.
    Required,
}

/// `{type: "function", function: {name}}`: this function must be called.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatNamedToolChoice))]
pub struct NamedToolChoice {
    /// `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The function to call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<FunctionName>,
}

/// `{name}` of a named tool choice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatFunctionName))]
pub struct FunctionName {
    /// The function's name.
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
    /// `{type: "text"}`: plain text (the default).
    Text,
    /// `{type: "json_object"}`: any valid JSON object.
    JsonObject,
    /// `{type: "json_schema", json_schema}`: structured output to a schema.
    JsonSchema {
        /// The schema and its name.
        json_schema: JsonSchemaFormat,
    },
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

/// `json_schema` of a `response_format`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatJsonSchemaFormat))]
pub struct JsonSchemaFormat {
    /// The schema's name.
    pub name: String,
    /// What the output is for, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Optional in OpenAI's reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// Whether the output must follow the schema exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

/// `thinking` (Anthropic-style, accepted by several Chat suppliers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatThinking))]
pub struct Thinking {
    /// Whether thinking is on.
    #[serde(rename = "type")]
    pub kind: ThinkingType,
    /// Tokens the model may spend thinking, with `enabled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u32>,
    /// How thinking is shown: `summarized` or `omitted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
}

/// `type` of `thinking`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatThinkingType))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ThinkingType {
    /// `enabled`: think within `budget_tokens`.
    Enabled,
    /// `disabled`: no thinking.
    Disabled,
    /// `adaptive`: the model decides how much to think.
    Adaptive,
}

/// `reasoning: {effort}`; other members are ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatReasoningParam))]
pub struct ReasoningParam {
    /// `minimal`, `low`, `medium` or `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    /// Every other member, kept as sent.
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

/// `stream_options`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatStreamOptions))]
pub struct StreamOptions {
    /// Whether the last chunk carries the request's `usage`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_usage: Option<bool>,
    /// Every other member, kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
