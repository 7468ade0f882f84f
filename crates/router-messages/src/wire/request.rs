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
    /// The model to use (`model`); required.
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
    /// System prompt: a string or text blocks (`system`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<Content>,
    /// The conversation so far, alternating `user` and `assistant` (`messages`); required.
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
    /// Sampling temperature, 0 to 1 (`temperature`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling mass, 0 to 1 (`top_p`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Whether to stream the reply as server-sent events (`stream`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// The tools the model may use (`tools`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolDefinition>>,
    /// How the model may use tools (`tool_choice`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Extended thinking (`thinking`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Thinking>,
    /// Server-side context editing (`context_management`), kept as sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_management: Option<Value>,
    /// Request metadata such as `user_id` (`metadata`), kept as sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// Output settings such as `effort` or `format` (`output_config`), kept as sent.
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
    /// The model whose tokenizer counts (`model`).
    #[schema(min_length = 1)]
    pub model: String,
    /// The conversation to count (`messages`).
    #[schema(min_items = 1, max_items = 100_000)]
    pub messages: Vec<InputMessage>,
    /// The system prompt to count (`system`).
    pub system: Option<Content>,
    /// The tools to count (`tools`).
    pub tools: Option<Vec<ToolDefinition>>,
    /// The tool choice, which changes the count (`tool_choice`).
    pub tool_choice: Option<ToolChoice>,
    /// Extended thinking, which changes the count (`thinking`).
    pub thinking: Option<Thinking>,
    /// The output cap (`max_tokens`): optional here, required on `/v1/messages`.
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
    /// `user`: the end user, or tool results.
    User,
    /// `assistant`: the model, earlier in the conversation.
    Assistant,
    /// `system`: instructions inside `messages`.
    System,
}

/// One entry of `messages`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesInputMessage))]
pub struct InputMessage {
    /// Who wrote the message.
    pub role: WireRole,
    /// A string or an array of content blocks.
    pub content: Content,
    /// Every other member of the message, kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl InputMessage {
    /// A message of `role` with `content` and no other members.
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
    /// `{type: "text", text}`.
    Text(TextBlock),
    /// `{type: "image", source}`.
    Image(ImageBlock),
    /// `{type: "tool_use", id, name, input}`: a call by the model.
    ToolUse(ToolUseBlock),
    /// `{type: "tool_result", tool_use_id, content?}`: a call's result.
    ToolResult(ToolResultBlock),
    /// `{type: "thinking", thinking, signature}`: the model's reasoning.
    Thinking(ThinkingBlock),
    /// `{type: "redacted_thinking", data}`: reasoning withheld by the supplier.
    RedactedThinking(RedactedThinkingBlock),
    /// Any other block, kept whole.
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

/// `{type: "text", text}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesTextBlock))]
pub struct TextBlock {
    /// The text.
    pub text: String,
    /// A prompt-cache breakpoint after this block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
    /// Citations need documents or search results, which the client codec
    /// does not accept: only `null` or `[]` pass it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citations: Option<Value>,
    /// Every other member, kept as sent.
    #[serde(flatten, deserialize_with = "untagged")]
    pub extra: Map<String, Value>,
}

/// `{type: "image", source}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesImageBlock))]
pub struct ImageBlock {
    /// Where the image comes from.
    pub source: ImageSource,
    /// A prompt-cache breakpoint after this block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
    /// Every other member, kept as sent.
    #[serde(flatten, deserialize_with = "untagged")]
    pub extra: Map<String, Value>,
}

/// An image `source`: base64 bytes, a URL, or an uploaded file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesImageSource))]
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

/// `{type: "tool_use", id, name, input}`: a tool call by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesToolUseBlock))]
pub struct ToolUseBlock {
    /// The call's id (`toolu_...`), quoted by its `tool_result`.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments: a JSON object.
    pub input: Value,
    /// A prompt-cache breakpoint after this block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
    /// Every other member, kept as sent.
    #[serde(flatten, deserialize_with = "untagged")]
    pub extra: Map<String, Value>,
}

/// `{type: "tool_result", tool_use_id, content?, is_error?}`: a call's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesToolResultBlock))]
pub struct ToolResultBlock {
    /// The id of the `tool_use` it answers.
    pub tool_use_id: String,
    /// The result: a string or content blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Content>,
    /// Whether the call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// A prompt-cache breakpoint after this block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
    /// Every other member, kept as sent.
    #[serde(flatten, deserialize_with = "untagged")]
    pub extra: Map<String, Value>,
}

/// `{type: "thinking", thinking, signature}`: the model's reasoning.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesThinkingBlock))]
pub struct ThinkingBlock {
    /// The reasoning text (or its summary).
    pub thinking: String,
    /// Required in a request's history; always written in a reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Every other member, kept as sent.
    #[serde(flatten, deserialize_with = "untagged")]
    pub extra: Map<String, Value>,
}

/// `{type: "redacted_thinking", data}`: reasoning the supplier encrypted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesRedactedThinkingBlock))]
pub struct RedactedThinkingBlock {
    /// The encrypted reasoning, to be sent back unchanged.
    pub data: String,
    /// Every other member, kept as sent.
    #[serde(flatten, deserialize_with = "untagged")]
    pub extra: Map<String, Value>,
}

/// A prompt-cache breakpoint: `{type: "ephemeral", ttl?: "5m" | "1h"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesCacheControl))]
pub struct CacheControl {
    /// `ephemeral`, the only kind.
    #[serde(rename = "type")]
    pub kind: String,
    /// How long the entry lives: `5m` (the default) or `1h`.
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
    /// The name the model calls the tool by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the tool does, for the model to decide when to use it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The input's JSON Schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
    /// A prompt-cache breakpoint after this tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
    /// Whether the input must follow the schema exactly.
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
    /// Every other member, kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `tool_choice`: always an object (a bare string is refused).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesToolChoice))]
#[serde(expecting = "a tool_choice object")]
pub struct ToolChoice {
    /// `auto`, `any`, `tool` or `none`.
    #[serde(rename = "type")]
    pub kind: String,
    /// With `tool`: the tool that must be used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Whether the model must use at most one tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_parallel_tool_use: Option<bool>,
    /// Every other member, kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `thinking`: `disabled`, `adaptive`, or `enabled` with `budget_tokens`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesThinking))]
#[serde(expecting = "a thinking object")]
pub struct Thinking {
    /// `enabled`, `disabled` or `adaptive`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Tokens the model may spend thinking, with `enabled` (at least 1024).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u32>,
    /// How thinking is shown: `summarized` or `omitted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
    /// Every other member, kept as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
