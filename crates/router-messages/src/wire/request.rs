//! The body of `POST /v1/messages` (and `count_tokens`): what a client sends,
//! and what is sent on to a Messages supplier.
//!
//! Types here check JSON *shape* only (serde reports the path of a wrong
//! type); value rules (ranges, conflicts, required fields, unknown members,
//! unsupported blocks and tools) are the client codec's, so every rejection
//! names its parameter the same way. Content blocks are shared with the
//! reply ([`super::response::MessageObject`]).

use router_canonical::parse::{ObjectVisitor, nested_message, tag, typed};
use serde::de;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// A Messages request body.
///
/// Required members are `Option` so that their absence is reported by the
/// validator with `param` set, like every other rule. `context_management`,
/// `metadata` and `output_config` are kept as JSON: they are validated by
/// hand and forwarded verbatim to native routes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(as = MessagesRequest, description = "A Messages request (`max_tokens` is required on /v1/messages, not on count_tokens).")
)]
#[serde(default, expecting = "a JSON object")]
pub struct MessagesRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(required = true, nullable = false))]
    pub model: Option<String>,
    /// Required on `/v1/messages`, not on count_tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(required = true, nullable = false, minimum = 1)
    )]
    pub max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<Content>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(required = true, nullable = false, min_items = 1, max_items = 100_000)
    )]
    pub messages: Option<Vec<InputMessage>>,
    /// `Some(None)` is an explicit `null`, which Messages rejects.
    #[serde(
        deserialize_with = "explicit_null",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub stop_sequences: Option<Option<Vec<String>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolDefinition>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Thinking>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_management: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_config: Option<Value>,
    /// Every other top-level member (rejected by the client codec, except
    /// the common routing fields).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The body of `POST /v1/messages/count_tokens`, for the OpenAPI
/// description: the count body (model, messages, system, tools) and what
/// changes a count (tool choice, thinking, an optional `max_tokens`); the
/// generation controls of [`MessagesRequest`] are refused there.
#[cfg(feature = "openapi")]
#[derive(utoipa::ToSchema)]
#[schema(as = MessagesCountTokensRequest)]
#[serde(deny_unknown_fields)]
pub struct CountTokensRequest {
    /// A routing field of every inference body.
    #[schema(minimum = 0, maximum = 99.99)]
    pub min_discount_percent: Option<f64>,
    /// A routing field of every inference body.
    pub zdr: Option<bool>,
    #[schema(min_length = 1)]
    pub model: String,
    #[schema(min_items = 1, max_items = 100_000)]
    pub messages: Vec<InputMessage>,
    pub system: Option<Content>,
    pub tools: Option<Vec<ToolDefinition>>,
    pub tool_choice: Option<ToolChoice>,
    pub thinking: Option<Thinking>,
    #[schema(minimum = 1)]
    pub max_tokens: Option<u32>,
}

/// Absent is `None`, `null` is `Some(None)`.
fn explicit_null<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// A message role. `system` is accepted in `messages` but pins the request
/// to a Messages supplier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesWireRole))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum WireRole {
    User,
    Assistant,
    System,
}

/// One entry of `messages`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesInputMessage))]
pub struct InputMessage {
    pub role: WireRole,
    pub content: Content,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl InputMessage {
    pub fn new(role: WireRole, content: Content) -> Self {
        InputMessage {
            role,
            content,
            extra: Map::new(),
        }
    }
}

router_canonical::string_or_seq! {
    /// `content` (and `system`, and a tool result's `content`): a string or an
    /// array of blocks.
    pub type Content = StringOrSeq<ContentKind> of ContentBlock;
    expecting "a string or an array of content blocks";
    schema "MessagesContent", "A string, or an array of content blocks.",
        element router_canonical::openapi::reference::<ContentBlock>(), uses [ContentBlock];
}

/// One content block. Known types are typed; any other `type` is kept whole
/// in `Unknown` (the client codec rejects it; the supplier codec reports
/// it as unsupported).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ContentBlock {
    Text(TextBlock),
    Image(ImageBlock),
    ToolUse(ToolUseBlock),
    ToolResult(ToolResultBlock),
    Thinking(ThinkingBlock),
    RedactedThinking(RedactedThinkingBlock),
    Unknown(Value),
}

impl ContentBlock {
    /// The `type` of the block.
    pub fn kind(&self) -> &str {
        match self {
            ContentBlock::Text(_) => "text",
            ContentBlock::Image(_) => "image",
            ContentBlock::ToolUse(_) => "tool_use",
            ContentBlock::ToolResult(_) => "tool_result",
            ContentBlock::Thinking(_) => "thinking",
            ContentBlock::RedactedThinking(_) => "redacted_thinking",
            ContentBlock::Unknown(value) => value.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }

    /// A text block without a marker.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextBlock {
            text: text.into(),
            cache_control: None,
            citations: None,
            extra: Map::new(),
        })
    }
}

impl Serialize for ContentBlock {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Tagged<'a> {
            Text(&'a TextBlock),
            Image(&'a ImageBlock),
            ToolUse(&'a ToolUseBlock),
            ToolResult(&'a ToolResultBlock),
            Thinking(&'a ThinkingBlock),
            RedactedThinking(&'a RedactedThinkingBlock),
        }
        match self {
            ContentBlock::Text(b) => Tagged::Text(b).serialize(s),
            ContentBlock::Image(b) => Tagged::Image(b).serialize(s),
            ContentBlock::ToolUse(b) => Tagged::ToolUse(b).serialize(s),
            ContentBlock::ToolResult(b) => Tagged::ToolResult(b).serialize(s),
            ContentBlock::Thinking(b) => Tagged::Thinking(b).serialize(s),
            ContentBlock::RedactedThinking(b) => Tagged::RedactedThinking(b).serialize(s),
            ContentBlock::Unknown(value) => value.serialize(s),
        }
    }
}

#[cfg(feature = "openapi")]
router_canonical::impl_to_schema!(
    ContentBlock as "MessagesContentBlock",
    uses [
        TextBlock,
        ImageBlock,
        ToolUseBlock,
        ToolResultBlock,
        ThinkingBlock,
        RedactedThinkingBlock,
    ],
    {
        use router_canonical::openapi::{any_of, object, tagged};
        any_of(
            [
                tagged::<TextBlock>("text"),
                tagged::<ImageBlock>("image"),
                tagged::<ToolUseBlock>("tool_use"),
                tagged::<ToolResultBlock>("tool_result"),
                tagged::<ThinkingBlock>("thinking"),
                tagged::<RedactedThinkingBlock>("redacted_thinking"),
                object("Another block type; refused by name (documents, server tools, ...)."),
            ],
            "A content block, keyed by `type`.",
        )
    }
);

impl<'de> Deserialize<'de> for ContentBlock {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = d.deserialize_map(ObjectVisitor("a content block object"))?;
        match tag(&map)? {
            "text" => typed(map).map(ContentBlock::Text),
            "image" => typed(map).map(ContentBlock::Image),
            "tool_use" => typed(map).map(ContentBlock::ToolUse),
            "tool_result" => typed(map).map(ContentBlock::ToolResult),
            "thinking" => typed(map).map(ContentBlock::Thinking),
            "redacted_thinking" => typed(map).map(ContentBlock::RedactedThinking),
            _ => Ok(ContentBlock::Unknown(Value::Object(map))),
        }
    }
}

/// Members every block may carry that this crate does not know.
/// The `type` tag itself is removed before a block is stored.
fn without_type(mut extra: Map<String, Value>) -> Map<String, Value> {
    extra.remove("type");
    extra
}

fn untagged<'de, D: Deserializer<'de>>(d: D) -> Result<Map<String, Value>, D::Error> {
    Map::deserialize(d).map(without_type)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesTextBlock))]
pub struct TextBlock {
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
    /// Citations need documents or search results, which the client codec
    /// does not accept: only `null` or `[]` pass it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citations: Option<Value>,
    #[serde(flatten, deserialize_with = "untagged")]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesImageBlock))]
pub struct ImageBlock {
    pub source: ImageSource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
    #[serde(flatten, deserialize_with = "untagged")]
    pub extra: Map<String, Value>,
}

/// An image `source`: base64 bytes, a URL, or an uploaded file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesImageSource))]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ImageSource {
    Base64 { media_type: String, data: String },
    Url { url: String },
    File { file_id: String },
}

impl<'de> Deserialize<'de> for ImageSource {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Base64 {
            #[serde(rename = "type")]
            _kind: String,
            media_type: String,
            data: String,
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Url {
            #[serde(rename = "type")]
            _kind: String,
            url: String,
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            #[serde(rename = "type")]
            _kind: String,
            file_id: String,
        }
        let map = d.deserialize_map(ObjectVisitor("an image source object"))?;
        match tag(&map)? {
            "base64" => typed(map).map(|s: Base64| ImageSource::Base64 {
                media_type: s.media_type,
                data: s.data,
            }),
            "url" => typed(map).map(|s: Url| ImageSource::Url { url: s.url }),
            "file" => typed(map).map(|s: File| ImageSource::File { file_id: s.file_id }),
            other => Err(de::Error::custom(nested_message(
                "type",
                &format!("unknown variant `{other}`, expected one of `base64`, `url`, `file`"),
            ))),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesToolUseBlock))]
pub struct ToolUseBlock {
    pub id: String,
    pub name: String,
    /// The arguments: a JSON object.
    pub input: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
    #[serde(flatten, deserialize_with = "untagged")]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesToolResultBlock))]
pub struct ToolResultBlock {
    pub tool_use_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Content>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
    #[serde(flatten, deserialize_with = "untagged")]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesThinkingBlock))]
pub struct ThinkingBlock {
    pub thinking: String,
    /// Required in a request's history; always written in a reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    #[serde(flatten, deserialize_with = "untagged")]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesRedactedThinkingBlock))]
pub struct RedactedThinkingBlock {
    pub data: String,
    #[serde(flatten, deserialize_with = "untagged")]
    pub extra: Map<String, Value>,
}

/// A prompt-cache breakpoint: `{type: "ephemeral", ttl?: "5m" | "1h"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesCacheControl))]
pub struct CacheControl {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<String>,
}

/// An entry of `tools`. Every member is optional here so that the validator
/// can name what is wrong (a hosted tool's `type`, a missing `input_schema`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesToolDefinition))]
#[serde(default, expecting = "a tool object")]
pub struct ToolDefinition {
    /// Absent or `custom` for a client tool; anything else is a hosted or
    /// server tool (rejected by the client codec).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
    /// Stream the tool's input without buffering it (how the reply is
    /// streamed only: dropped on a converted route).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eager_input_streaming: Option<bool>,
    /// Keep the tool out of the initial prompt until it is searched for
    /// (how the tool is loaded only: dropped on a converted route).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defer_loading: Option<bool>,
    /// Example inputs shown to the model: they change what it sees, so a
    /// request with them needs a native Messages route.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_examples: Option<Vec<Value>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `tool_choice`: always an object (a bare string is refused).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesToolChoice))]
#[serde(expecting = "a tool_choice object")]
pub struct ToolChoice {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_parallel_tool_use: Option<bool>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `thinking`: `disabled`, `adaptive`, or `enabled` with `budget_tokens`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesThinking))]
#[serde(expecting = "a thinking object")]
pub struct Thinking {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
