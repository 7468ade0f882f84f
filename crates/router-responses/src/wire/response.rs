//! The `response` object: read from Responses suppliers (lenient: unknown
//! fields ignored, unknown output items kept for a typed error) and written
//! to the router's clients (every member the OpenAI SDKs require).

use super::request::ReasoningItem;
use super::required_tag;
use router_canonical::parse::{ObjectVisitor, typed};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Number, Value};

/// A `response` object.
///
/// The request echo members (`tools`, `tool_choice`, `text`, `reasoning`,
/// `metadata`) are kept as plain JSON: a supplier's are never read, and the
/// client codec writes the client's request back in them
/// ([`RequestEcho`](crate::RequestEcho)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesResponseObject))]
pub struct ResponseObject {
    /// The response's id (`resp_...`).
    #[serde(default)]
    pub id: String,
    /// Always `response`.
    #[serde(default = "response_kind")]
    pub object: String,
    /// Unix seconds; an integer from the router, any number from a supplier.
    #[serde(default = "zero")]
    #[cfg_attr(feature = "openapi", schema(value_type = f64))]
    pub created_at: Number,
    /// `completed`, `incomplete`, `failed` or `in_progress`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Whether the response ran in the background (always `false` here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<bool>,
    /// Required and nullable: `null` unless the response failed.
    #[serde(default)]
    pub error: Option<ResponseError>,
    /// Required and nullable: `null` unless the response is incomplete.
    #[serde(default)]
    pub incomplete_details: Option<IncompleteDetails>,
    /// Required and nullable: the request's `instructions`.
    #[serde(default)]
    pub instructions: Option<Value>,
    /// Required and nullable: the request's `max_output_tokens`.
    #[serde(default)]
    pub max_output_tokens: Option<Value>,
    /// The model that generated the response.
    #[serde(default)]
    pub model: String,
    /// The generated items: messages, function calls, reasoning.
    #[serde(default)]
    pub output: Vec<OutputItem>,
    /// The request's `parallel_tool_calls` (default `true`).
    #[serde(default = "yes")]
    pub parallel_tool_calls: bool,
    /// Required and nullable.
    #[serde(default)]
    pub previous_response_id: Option<String>,
    /// The request's `reasoning` (`effort`, `summary`), each `null` when not set.
    #[serde(default)]
    pub reasoning: Value,
    /// Whether the response is stored (always `false` here: the API is used statelessly).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<bool>,
    /// The request's `temperature`.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// The request's `text` settings (`format`, `verbosity`).
    #[serde(default)]
    pub text: Value,
    /// The request's `tool_choice` (`auto` when not set).
    #[serde(default)]
    pub tool_choice: Value,
    /// The request's `tools`.
    #[serde(default)]
    pub tools: Vec<Value>,
    /// The request's `top_p`.
    #[serde(default)]
    pub top_p: Option<f64>,
    /// `disabled`: the input is never truncated to fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncation: Option<String>,
    /// Required and nullable: `null` until the response is complete.
    #[serde(default)]
    pub usage: Option<ResponseUsage>,
    /// The request's `user`.
    #[serde(default)]
    pub user: Option<String>,
    /// The request's `safety_identifier`, when it set one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety_identifier: Option<String>,
    /// The request's `top_logprobs`, when it set one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_logprobs: Option<Value>,
    /// The request's `prompt_cache_key`, when it set one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<String>,
    /// The request's `metadata` (an empty object when not set).
    #[serde(default)]
    pub metadata: Value,
}

pub(crate) fn response_kind() -> String {
    "response".to_owned()
}

fn zero() -> Number {
    Number::from(0)
}

fn yes() -> bool {
    true
}

/// `error` of a failed response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesResponseError))]
pub struct ResponseError {
    /// One of the reference's codes when the router writes it (`server_error`,
    /// `rate_limit_exceeded`); anything from a supplier.
    #[serde(default)]
    pub code: Option<String>,
    /// A human-readable description.
    #[serde(default)]
    pub message: String,
}

/// `incomplete_details`: why generation stopped early.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesIncompleteDetails))]
pub struct IncompleteDetails {
    /// `max_output_tokens` or `content_filter` (a supplier may add more).
    #[serde(default)]
    pub reason: Option<String>,
}

/// One item of `output`. Unknown item types are kept whole so the decoder can
/// reject them by name.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum OutputItem {
    /// `{type: "message", role: "assistant", content}`.
    Message(OutputMessage),
    /// `{type: "function_call", call_id, name, arguments}`.
    FunctionCall(FunctionCallOutput),
    /// `{type: "reasoning", summary, encrypted_content?}`.
    Reasoning(ReasoningItem),
    /// Any other item, kept whole.
    Unknown(Value),
}

impl OutputItem {
    /// The item's `type`.
    pub fn kind(&self) -> &str {
        match self {
            OutputItem::Message(_) => "message",
            OutputItem::FunctionCall(_) => "function_call",
            OutputItem::Reasoning(_) => "reasoning",
            OutputItem::Unknown(value) => value.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }
}

impl Serialize for OutputItem {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Tagged<'a> {
            Message(&'a OutputMessage),
            FunctionCall(&'a FunctionCallOutput),
            Reasoning(&'a ReasoningItem),
        }
        match self {
            OutputItem::Message(i) => Tagged::Message(i).serialize(s),
            OutputItem::FunctionCall(i) => Tagged::FunctionCall(i).serialize(s),
            OutputItem::Reasoning(i) => Tagged::Reasoning(i).serialize(s),
            OutputItem::Unknown(value) => value.serialize(s),
        }
    }
}

#[cfg(feature = "openapi")]
router_canonical::impl_to_schema!(
    OutputItem as "ResponsesOutputItem",
    uses [OutputMessage, FunctionCallOutput, ReasoningItem],
    {
        use router_canonical::openapi::{any_of, object, tagged};
        any_of(
            [
                tagged::<OutputMessage>("message"),
                tagged::<FunctionCallOutput>("function_call"),
                tagged::<ReasoningItem>("reasoning"),
                object("Another output item type."),
            ],
            "An output item, keyed by `type`.",
        )
    }
);

impl<'de> Deserialize<'de> for OutputItem {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = d.deserialize_map(ObjectVisitor("an output item object"))?;
        match required_tag(&map)? {
            "message" => typed(map).map(OutputItem::Message),
            "function_call" => typed(map).map(OutputItem::FunctionCall),
            "reasoning" => typed(map).map(OutputItem::Reasoning),
            _ => Ok(OutputItem::Unknown(Value::Object(map))),
        }
    }
}

/// An assistant message in `output`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesOutputMessage))]
pub struct OutputMessage {
    /// The item's id (`msg_...`).
    #[serde(default)]
    pub id: String,
    /// `in_progress`, `completed` or `incomplete`.
    #[serde(default = "in_progress")]
    pub status: String,
    /// Always `assistant`.
    #[serde(default = "assistant")]
    pub role: String,
    /// The message's parts: text and refusals.
    #[serde(default)]
    pub content: Vec<OutputContent>,
}

fn in_progress() -> String {
    "in_progress".to_owned()
}

fn assistant() -> String {
    "assistant".to_owned()
}

/// A function call in `output`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesFunctionCallOutput))]
pub struct FunctionCallOutput {
    /// The item's id (`fc_...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `in_progress`, `completed` or `incomplete`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The call's id, quoted by the client's `function_call_output`.
    pub call_id: String,
    /// The function's name.
    pub name: String,
    /// The `namespace` tool the function belongs to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The arguments: JSON text as the model produced it.
    #[serde(default)]
    pub arguments: String,
}

/// A content part of an output message.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum OutputContent {
    /// `{type: "output_text", text, annotations, logprobs}`.
    OutputText(OutputText),
    /// `{type: "refusal", refusal}`.
    Refusal(OutputRefusal),
    /// Any other part, kept whole.
    Unknown(Value),
}

impl OutputContent {
    /// The `type` of the part.
    pub fn kind(&self) -> &str {
        match self {
            OutputContent::OutputText(_) => "output_text",
            OutputContent::Refusal(_) => "refusal",
            OutputContent::Unknown(value) => {
                value.get("type").and_then(Value::as_str).unwrap_or("")
            }
        }
    }
}

impl Serialize for OutputContent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        enum Tagged<'a> {
            OutputText(&'a OutputText),
            Refusal(&'a OutputRefusal),
        }
        match self {
            OutputContent::OutputText(p) => Tagged::OutputText(p).serialize(s),
            OutputContent::Refusal(p) => Tagged::Refusal(p).serialize(s),
            OutputContent::Unknown(value) => value.serialize(s),
        }
    }
}

#[cfg(feature = "openapi")]
router_canonical::impl_to_schema!(
    OutputContent as "ResponsesOutputContent",
    uses [OutputText, OutputRefusal],
    {
        use router_canonical::openapi::{any_of, object, tagged};
        any_of(
            [
                tagged::<OutputText>("output_text"),
                tagged::<OutputRefusal>("refusal"),
                object("Another content type."),
            ],
            "A content part of an output message, keyed by `type`.",
        )
    }
);

impl<'de> Deserialize<'de> for OutputContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = d.deserialize_map(ObjectVisitor("an output content object"))?;
        match required_tag(&map)? {
            "output_text" => typed(map).map(OutputContent::OutputText),
            "refusal" => typed(map).map(OutputContent::Refusal),
            _ => Ok(OutputContent::Unknown(Value::Object(map))),
        }
    }
}

/// `output_text`. The router writes `annotations: []` and `logprobs: []`;
/// a supplier's are read and ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesOutputText))]
pub struct OutputText {
    /// The text.
    pub text: String,
    /// Citations and other annotations (always written empty).
    #[serde(default)]
    pub annotations: Vec<Value>,
    /// Token log probabilities (always written empty).
    #[serde(default)]
    pub logprobs: Vec<Value>,
}

/// `{type: "refusal", refusal}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesOutputRefusal))]
pub struct OutputRefusal {
    /// The model's refusal message.
    pub refusal: String,
}

/// `usage` of a response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesResponseUsage))]
pub struct ResponseUsage {
    /// Tokens in the input, cached ones included.
    pub input_tokens: u64,
    /// A breakdown of the input tokens.
    #[serde(default)]
    pub input_tokens_details: Option<InputTokensDetails>,
    /// Tokens generated, reasoning included.
    pub output_tokens: u64,
    /// A breakdown of the output tokens.
    #[serde(default)]
    pub output_tokens_details: Option<OutputTokensDetails>,
    /// `input_tokens` plus `output_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// The charge in USD, written when the reply states one; a supplier's
    /// own `cost` is read and ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Value>,
}

/// `input_tokens_details`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesInputTokensDetails))]
pub struct InputTokensDetails {
    /// Input tokens read from the prompt cache.
    #[serde(default, deserialize_with = "null_as_zero")]
    pub cached_tokens: u64,
    /// Tokens written to the prompt cache (the openai SDK requires the field).
    #[serde(default, deserialize_with = "null_as_zero")]
    pub cache_write_tokens: u64,
}

/// `output_tokens_details`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesOutputTokensDetails))]
pub struct OutputTokensDetails {
    /// Output tokens spent on reasoning.
    #[serde(default, deserialize_with = "null_as_zero")]
    pub reasoning_tokens: u64,
}

/// Some OpenAI-compatible suppliers send `null` for a zero count.
fn null_as_zero<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Option::<u64>::deserialize(d).map(Option::unwrap_or_default)
}

/// The plain JSON object with these members (for the fixed echo values).
pub(crate) fn object<const N: usize>(members: [(&str, Value); N]) -> Value {
    Value::Object(
        members
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect::<Map<String, Value>>(),
    )
}
