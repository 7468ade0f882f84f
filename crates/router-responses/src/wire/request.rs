//! The body of `POST /v1/responses`: what a client sends, and what the router
//! sends on to a Responses supplier.
//!
//! Types here check JSON *shape* only (serde reports the path of a wrong
//! type); value rules (ranges, conflicts, statelessness, unsupported media and
//! tools) are checked by [`crate::ResponsesClient`] so every rejection names
//! its parameter the same way.

use super::required_tag;
use router_canonical::parse::{ObjectVisitor, nested_message, optional_tag, typed};
use serde::de::{self, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use std::fmt;

/// A Responses request body.
///
/// `model` and `input` are `Option` so that their absence is reported by the
/// validator with `param` set, like every other rule. A `null` member reads
/// as absent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(as = ResponsesRequest, description = "A Responses request (stateless: `store` must be false).")
)]
#[serde(default, expecting = "a JSON object")]
pub struct ResponsesRequest {
    /// The model to use (`model`); required.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(required = true, nullable = false))]
    pub model: Option<String>,
    /// The conversation: a string (one user message) or input items (`input`); required.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(required = true, nullable = false))]
    pub input: Option<Input>,
    /// A system message placed before `input`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Only `false` (or absent) is accepted; the router always sends `false`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<bool>,
    /// The cap on generated tokens, reasoning included (`max_output_tokens`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// Sampling temperature, 0 to 2 (`temperature`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling mass, 0 to 1 (`top_p`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// The functions the model may call (`tools`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolDefinition>>,
    /// Whether and which tool the model must call (`tool_choice`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Whether the model may call several tools in one turn (`parallel_tool_calls`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// `reasoning: {effort, summary}`; `null` means omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningParam>,
    /// Alias of `reasoning.effort` accepted inbound; never sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// `text: {format, verbosity}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<TextParam>,
    /// Whether to stream the reply as server-sent events (`stream`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// An identifier of the end user (`user`, deprecated for `safety_identifier`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// A stable, hashed identifier of the end user for abuse monitoring (`safety_identifier`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub safety_identifier: Option<String>,
    /// Server-side state: always rejected when not null.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_response_id: Option<String>,
    /// Server-side state: always rejected when not null.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation: Option<Value>,
    /// Asynchronous stored responses: `true` is rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background: Option<bool>,
    /// A stored prompt template of the caller's OpenAI account: rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<Value>,
    /// Every other top-level property (accepted, then vetted).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The body of `POST /v1/responses/input_tokens`, for the OpenAPI
/// description: what a create body says about its input (model, input,
/// instructions, tools and the choices that change a count). Other members
/// are read as on `POST /v1/responses` (server-side state refused, the rest
/// ignored).
#[cfg(feature = "openapi")]
#[derive(utoipa::ToSchema)]
#[schema(as = ResponsesInputTokensRequest)]
pub struct InputTokensRequest {
    /// The model whose tokenizer counts (`model`).
    #[schema(min_length = 1)]
    pub model: String,
    /// Optional here: instructions and tools alone count too. No images.
    pub input: Option<Input>,
    /// A system message placed before `input` (`instructions`).
    pub instructions: Option<String>,
    /// The tools to count (`tools`).
    pub tools: Option<Vec<ToolDefinition>>,
    /// The tool choice, which changes the count (`tool_choice`).
    pub tool_choice: Option<ToolChoice>,
    /// Whether several tools may be called in one turn (`parallel_tool_calls`).
    pub parallel_tool_calls: Option<bool>,
    /// Reasoning settings (`reasoning`).
    pub reasoning: Option<ReasoningParam>,
    /// Output format settings (`text`).
    pub text: Option<TextParam>,
}

router_canonical::string_or_seq! {
    /// `input`: a string (one user message) or an array of items.
    pub type Input = StringOrSeq<InputKind> of InputItem;
    expecting "a string or an array of input items";
    schema "ResponsesInput", "A string (one user message), or an array of input items.",
        element router_canonical::openapi::reference::<InputItem>(), uses [InputItem];
}

/// One item of `input`. The four item types the router understands are
/// typed; every other one (`item_reference`, hosted-tool calls, ...) is kept
/// whole in `Other` for the validator to name and reject.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum InputItem {
    /// A message (`type: "message"`, or no `type` with a `role`).
    Message(MessageItem),
    /// `function_call`: a call the model made, replayed.
    FunctionCall(FunctionCallItem),
    /// `function_call_output`: the client's result of a call.
    FunctionCallOutput(FunctionCallOutputItem),
    /// `reasoning`: the model's reasoning, replayed.
    Reasoning(ReasoningItem),
    /// Any other item, kept whole.
    Other(Value),
}

impl InputItem {
    /// The item's `type`. An object without `type` is a message when it has a
    /// `role` (or no `id`), and an `item_reference` otherwise, as in the
    /// OpenAI reference where both may omit `type`.
    pub fn kind(&self) -> &str {
        match self {
            InputItem::Message(_) => "message",
            InputItem::FunctionCall(_) => "function_call",
            InputItem::FunctionCallOutput(_) => "function_call_output",
            InputItem::Reasoning(_) => "reasoning",
            InputItem::Other(value) => value
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("item_reference"),
        }
    }
}

impl Serialize for InputItem {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Tagged<'a> {
            Message(&'a MessageItem),
            FunctionCall(&'a FunctionCallItem),
            FunctionCallOutput(&'a FunctionCallOutputItem),
            Reasoning(&'a ReasoningItem),
        }
        match self {
            InputItem::Message(i) => Tagged::Message(i).serialize(s),
            InputItem::FunctionCall(i) => Tagged::FunctionCall(i).serialize(s),
            InputItem::FunctionCallOutput(i) => Tagged::FunctionCallOutput(i).serialize(s),
            InputItem::Reasoning(i) => Tagged::Reasoning(i).serialize(s),
            InputItem::Other(value) => value.serialize(s),
        }
    }
}

#[cfg(feature = "openapi")]
router_canonical::impl_to_schema!(
    InputItem as "ResponsesInputItem",
    uses [MessageItem, FunctionCallItem, FunctionCallOutputItem, ReasoningItem],
    {
        use router_canonical::openapi::{any_of, object, reference, tagged};
        any_of(
            [
                tagged::<MessageItem>("message"),
                reference::<MessageItem>(),
                tagged::<FunctionCallItem>("function_call"),
                tagged::<FunctionCallOutputItem>("function_call_output"),
                tagged::<ReasoningItem>("reasoning"),
                object("Another item type; the router refuses it by name."),
            ],
            "An input item, keyed by `type` (a message may omit it).",
        )
    }
);

impl<'de> Deserialize<'de> for InputItem {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = d.deserialize_map(ObjectVisitor("an input item object"))?;
        let kind = match optional_tag(&map)? {
            Some(kind) => kind,
            None if map.contains_key("role") || !map.contains_key("id") => "message",
            None => "item_reference",
        };
        match kind {
            "message" => typed(map).map(InputItem::Message),
            "function_call" => typed(map).map(InputItem::FunctionCall),
            "function_call_output" => typed(map).map(InputItem::FunctionCallOutput),
            "reasoning" => typed(map).map(InputItem::Reasoning),
            _ => Ok(InputItem::Other(Value::Object(map))),
        }
    }
}

/// Who wrote a message item (`role`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesMessageRole))]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    /// `user`: the end user.
    User,
    /// `assistant`: the model, earlier in the conversation.
    Assistant,
    /// `system`: instructions from the application.
    System,
    /// `developer`: instructions from the application (the newer name for `system`).
    Developer,
}

/// A message item (`EasyInputMessage`, input message or replayed output message).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesMessageItem))]
pub struct MessageItem {
    /// Who wrote the message.
    pub role: MessageRole,
    /// A string or an array of content parts.
    pub content: MessageContent,
    /// Present on replayed output messages; never sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `in_progress`, `completed` or `incomplete`, on replayed output messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

router_canonical::string_or_seq! {
    /// `content` of a message item, or `output` of a `function_call_output`:
    /// a string or an array of parts.
    pub type MessageContent = StringOrSeq<MessageContentKind> of ContentPart;
    expecting "a string or an array of content parts";
    schema "ResponsesMessageContent", "A string, or an array of content parts.",
        element router_canonical::openapi::reference::<ContentPart>(), uses [ContentPart];
}

/// One content part of an input message or tool output. Known parts are
/// typed; any other `type` (`input_file`, `input_audio`, ...) is kept whole
/// in `Unknown` for the validator to name.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ContentPart {
    /// `{type: "input_text", text}`.
    InputText(TextPart),
    /// Assistant text replayed from an earlier response.
    OutputText(TextPart),
    /// `{type: "refusal", refusal}`, replayed from an earlier response.
    Refusal(RefusalPart),
    /// `{type: "input_image", image_url | file_id, detail?}`.
    InputImage(InputImagePart),
    /// Chat-style `{type: "image_url", image_url}`, accepted for clients that
    /// send it to every OpenAI surface; sent on as `input_image`.
    ImageUrl(ImageUrlPart),
    /// Anthropic-style `{type: "image", source}`; sent on as `input_image`.
    Image(ImagePart),
    /// Any other part, kept whole.
    Unknown(Value),
}

impl ContentPart {
    /// The `type` of the part.
    pub fn kind(&self) -> &str {
        match self {
            ContentPart::InputText(_) => "input_text",
            ContentPart::OutputText(_) => "output_text",
            ContentPart::Refusal(_) => "refusal",
            ContentPart::InputImage(_) => "input_image",
            ContentPart::ImageUrl(_) => "image_url",
            ContentPart::Image(_) => "image",
            ContentPart::Unknown(value) => value.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }
}

impl Serialize for ContentPart {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Tagged<'a> {
            InputText(&'a TextPart),
            OutputText(&'a TextPart),
            Refusal(&'a RefusalPart),
            InputImage(&'a InputImagePart),
            ImageUrl(&'a ImageUrlPart),
            Image(&'a ImagePart),
        }
        match self {
            ContentPart::InputText(p) => Tagged::InputText(p).serialize(s),
            ContentPart::OutputText(p) => Tagged::OutputText(p).serialize(s),
            ContentPart::Refusal(p) => Tagged::Refusal(p).serialize(s),
            ContentPart::InputImage(p) => Tagged::InputImage(p).serialize(s),
            ContentPart::ImageUrl(p) => Tagged::ImageUrl(p).serialize(s),
            ContentPart::Image(p) => Tagged::Image(p).serialize(s),
            ContentPart::Unknown(value) => value.serialize(s),
        }
    }
}

#[cfg(feature = "openapi")]
router_canonical::impl_to_schema!(
    ContentPart as "ResponsesContentPart",
    uses [TextPart, RefusalPart, InputImagePart, ImageUrlPart, ImagePart],
    {
        use router_canonical::openapi::{any_of, object, tagged};
        any_of(
            [
                tagged::<TextPart>("input_text"),
                tagged::<TextPart>("output_text"),
                tagged::<RefusalPart>("refusal"),
                tagged::<InputImagePart>("input_image"),
                tagged::<ImageUrlPart>("image_url"),
                tagged::<ImagePart>("image"),
                object("Another part type; the router refuses media it cannot carry."),
            ],
            "A content part, keyed by `type`.",
        )
    }
);

impl<'de> Deserialize<'de> for ContentPart {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = d.deserialize_map(ObjectVisitor("a content part object"))?;
        match required_tag(&map)? {
            "input_text" => typed(map).map(ContentPart::InputText),
            "output_text" => typed(map).map(ContentPart::OutputText),
            "refusal" => typed(map).map(ContentPart::Refusal),
            "input_image" => typed(map).map(ContentPart::InputImage),
            "image_url" => typed(map).map(ContentPart::ImageUrl),
            "image" => typed(map).map(ContentPart::Image),
            _ => Ok(ContentPart::Unknown(Value::Object(map))),
        }
    }
}

/// `input_text` / `output_text`. A replayed `output_text`'s `annotations`
/// and `logprobs` are read and ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesTextPart))]
pub struct TextPart {
    /// The text.
    pub text: String,
    /// A prompt-cache marker, kept for Messages conversions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// `{type: "refusal", refusal}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesRefusalPart))]
pub struct RefusalPart {
    /// The model's refusal message.
    pub refusal: String,
}

/// `{type: "input_image", image_url | file_id, detail?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesInputImagePart))]
pub struct InputImagePart {
    /// The image's URL (`https:` or `data:`), when not a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_url: Option<String>,
    /// An uploaded file's id, when not a URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_id: Option<String>,
    /// `low`, `high` or `auto`: the resolution the model sees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// A prompt-cache marker, kept for Messages conversions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// `{type: "image_url", image_url: {url, detail?} | url}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesImageUrlPart))]
pub struct ImageUrlPart {
    /// The image's URL and detail level.
    pub image_url: ImageUrl,
    /// A prompt-cache marker, kept for Messages conversions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// `image_url`: `{url, detail?}`, or a bare URL string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesImageUrl))]
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
                let Object { url, detail } =
                    Object::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(ImageUrl { url, detail })
            }
        }
        d.deserialize_any(UrlVisitor)
    }
}

/// `{type: "image", source: {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesImagePart))]
pub struct ImagePart {
    /// Where the image comes from.
    pub source: ImageSource,
    /// A prompt-cache marker, kept for Messages conversions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// `source` of an Anthropic-style image part, keyed by `type`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesImageSource))]
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

/// A prompt-cache marker (`{type: "ephemeral", ttl?}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesCacheControl))]
pub struct CacheControl {
    /// `ephemeral`, the only kind.
    #[serde(rename = "type")]
    pub kind: String,
    /// How long the entry lives, such as `5m` or `1h`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<String>,
}

/// `{type: "function_call", call_id, name, arguments}`: a call the model made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesFunctionCallItem))]
pub struct FunctionCallItem {
    /// The call's id, quoted by the `function_call_output` that answers it.
    pub call_id: String,
    /// The function's name.
    pub name: String,
    /// The `namespace` tool the function belongs to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// JSON text as the model produced it; never reparsed.
    pub arguments: String,
    /// The item id (`fc_...`) of a replayed call; never sent (the stateless
    /// API does not need it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `in_progress`, `completed` or `incomplete`, on replayed calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// `{type: "function_call_output", call_id, output}`: the client's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesFunctionCallOutputItem))]
pub struct FunctionCallOutputItem {
    /// The `call_id` of the call it answers.
    pub call_id: String,
    /// The result: a string or content parts.
    pub output: MessageContent,
    /// The item id of a replayed output; never sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `in_progress`, `completed` or `incomplete`, on replayed outputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// `{type: "reasoning", summary, encrypted_content?, content?}`, both as an
/// input item and as an output item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesReasoningItem))]
pub struct ReasoningItem {
    /// `rs_...`. Output items always carry it; a stateless request does not
    /// need it and the router does not send it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Summary parts of the reasoning (empty when no summary was asked for).
    #[serde(default)]
    pub summary: Vec<ReasoningText>,
    /// Raw reasoning text (`reasoning_text` parts), from suppliers that expose it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ReasoningText>>,
    /// The opaque reasoning state a stateless conversation replays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_content: Option<String>,
    /// `in_progress`, `completed` or `incomplete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// A `summary_text` or `reasoning_text` part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesReasoningText))]
pub struct ReasoningText {
    /// `summary_text` or `reasoning_text`.
    #[serde(rename = "type", default = "summary_text")]
    pub kind: String,
    /// The text.
    pub text: String,
}

pub(crate) fn summary_text() -> String {
    "summary_text".to_owned()
}

/// An entry of `tools`. Only `type: "function"` is supported; hosted tool
/// types are read loosely so the validator can name them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesToolDefinition))]
pub struct ToolDefinition {
    /// The tool's `type`: `function`, `namespace`, or a hosted tool's name (refused).
    #[serde(rename = "type")]
    pub kind: String,
    /// The name the model calls the function (or namespace) by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the function does, for the model to decide when to call it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Required-but-nullable in the reference; the router always sends it
    /// for a function tool (a namespace has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
    /// `null`/absent means *true* on the Responses API (unlike Chat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
    /// A prompt-cache marker, kept for Messages conversions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
    /// The function tools a `type: "namespace"` tool groups under its
    /// `name` (Codex sends its MCP tools so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(no_recursion))]
    pub tools: Option<Vec<ToolDefinition>>,
}

/// `tool_choice`: a mode string or `{type: "function", name}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesToolChoice))]
#[serde(untagged)]
pub enum ToolChoice {
    /// `auto`, `none` or `required`.
    Mode(ToolChoiceMode),
    /// One function by name.
    Named(NamedToolChoice),
}

/// The string forms of `tool_choice`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesToolChoiceMode))]
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

/// An object `tool_choice`; only `type: "function"` is supported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesNamedToolChoice))]
pub struct NamedToolChoice {
    /// `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The function that must be called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
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
                NamedToolChoice::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(ToolChoice::Named)
            }
        }
        d.deserialize_any(ChoiceVisitor)
    }
}

/// `reasoning: {effort?, summary?}`; other members are ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesReasoningParam))]
pub struct ReasoningParam {
    /// How hard the model thinks: `minimal`, `low`, `medium` or `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    /// Whether to return a reasoning summary: `auto`, `concise` or `detailed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Deprecated spelling of `summary`, read only.
    #[serde(default, skip_serializing)]
    pub generate_summary: Option<String>,
}

/// `text: {format?, verbosity?}`; other members are ignored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesTextParam))]
pub struct TextParam {
    /// The reply's format: text, any JSON object, or JSON to a schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<TextFormat>,
    /// How long the reply should be: `low`, `medium` or `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbosity: Option<String>,
}

/// `text.format`. Unlike Chat's `response_format`, the schema members sit
/// beside `type` (no nested `json_schema`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesTextFormat))]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TextFormat {
    /// `{type: "text"}`: plain text (the default).
    Text,
    /// `{type: "json_object"}`: any valid JSON object.
    JsonObject,
    /// `{type: "json_schema", name, schema, ...}`: JSON to a schema.
    JsonSchema(JsonSchemaFormat),
}

/// The members of a `json_schema` text format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesJsonSchemaFormat))]
pub struct JsonSchemaFormat {
    /// The schema's name.
    pub name: String,
    /// The JSON Schema the output follows.
    pub schema: Value,
    /// What the output is for, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the output must follow the schema exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

/// Buffered like a content part, so an error inside a schema format keeps its
/// path (serde's internally tagged enums lose it).
impl<'de> Deserialize<'de> for TextFormat {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = d.deserialize_map(ObjectVisitor(
            "a text format object with `type` text, json_object or json_schema",
        ))?;
        match required_tag(&map)? {
            "text" => Ok(TextFormat::Text),
            "json_object" => Ok(TextFormat::JsonObject),
            "json_schema" => typed(map).map(TextFormat::JsonSchema),
            other => Err(de::Error::custom(nested_message(
                "type",
                &format!(
                    "unknown variant `{other}`, expected one of `text`, `json_object`, `json_schema`"
                ),
            ))),
        }
    }
}
