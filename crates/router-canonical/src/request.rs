//! The canonical request: the union of what the four inbound surfaces can say.

use crate::capability::{Capability, Requirements};
use crate::protocol::Protocol;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One inference request, independent of the protocol it arrived in.
///
/// Every member is protocol content: what the client's protocol said (a
/// client codec's `parse_request` fills them) or what a translation needs to
/// know about it ([`Request::inbound`], [`Request::native_only`]). A
/// gateway's own options for the request (routing constraints, prompt-cache
/// policy, ...) are no member: a gateway keeps them beside the request, and
/// reads its own body members through
/// [`ClientCodec::parse_request_with`](crate::ClientCodec::parse_request_with).
/// How a request is encoded for one supplier beyond its content (who signed
/// restored thinking, an automatic prompt-cache marker) is the
/// [`SupplierTarget`](crate::SupplierTarget)'s.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Request {
    /// The public model ID or alias the client asked for.
    pub model: String,
    /// The conversation, system and developer instructions included, in order.
    /// A protocol with a separate `system` field puts it first as `Role::System`.
    pub messages: Vec<Message>,
    /// The tools the model may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool>,
    /// Whether and which tool the model must call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Whether the model may call several tools in one turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// Sampling and length controls.
    #[serde(default)]
    pub sampling: Sampling,
    /// Reasoning effort and thinking.
    #[serde(default)]
    pub reasoning: Reasoning,
    /// Structured output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    /// Whether the reply is streamed.
    #[serde(default)]
    pub stream: bool,
    /// A stable end-user identifier (Chat and Completions `user`, Responses
    /// `user` or `safety_identifier`, Messages `metadata.user_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_user: Option<String>,
    /// Vetted protocol-specific fields that only a route of `native.protocol`
    /// understands (e.g. Chat `logit_bias`, Messages `context_management`).
    /// Encoders for that protocol copy them; other encoders ignore them only
    /// when they are annotations, and the parser marks behaviour-changing ones
    /// as `Requirements::native_only`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native: Option<NativeFields>,
    /// The surface the request arrived on, set by the parser. Encoders use it
    /// to tell a native pass-through from a conversion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inbound: Option<Protocol>,
    /// Set by a parser when the request holds something only a route of the
    /// inbound protocol carries without loss: the
    /// offending field path, used as the error's `param` when the model has
    /// no such route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native_only: Option<String>,
}

impl Request {
    /// Refuse, naming the field, to send this request to a supplier of
    /// `protocol` when it holds something only its inbound protocol carries
    /// ([`Request::native_only`]) and `protocol` is another: every supplier
    /// encoder checks this first, so a translation never drops such a field
    /// silently (a Chat `logprobs`, a Messages beta, ...).
    pub fn refuse_native_only(&self, protocol: Protocol) -> Result<(), crate::ApiError> {
        match (&self.native_only, self.inbound) {
            (Some(param), Some(inbound)) if inbound.rides() != protocol => {
                Err(crate::ApiError::unsupported_conversion(format!(
                    "`{param}` is carried only by a `{inbound}` supplier, not by `{protocol}`"
                ))
                .with_param(param.clone()))
            }
            _ => Ok(()),
        }
    }

    /// Refuse, naming `n`, to encode a request that asks for other than one
    /// choice ([`Sampling::choices`]): a canonical [`Response`](crate::Response)
    /// holds one, so no supplier encoder can carry the others. Every
    /// supplier encoder checks this; a gateway may refuse earlier with its
    /// own error.
    pub fn refuse_several_choices(&self) -> Result<(), crate::ApiError> {
        match (self.sampling.choices, self.sampling.best_of) {
            (Some(n), _) if n != 1 => Err(crate::ApiError::unsupported_conversion(format!(
                "`n` is {n}: a supplier request carries one choice"
            ))
            .with_param("n")),
            (_, Some(best_of)) if best_of != 1 => Err(crate::ApiError::unsupported_conversion(
                format!("`best_of` is {best_of}: a supplier request draws one sample"),
            )
            .with_param("best_of")),
            _ => Ok(()),
        }
    }
}

/// Fields kept verbatim for a same-protocol route.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NativeFields {
    /// The protocol they belong to.
    pub protocol: Option<Protocol>,
    /// The members, as the client sent them.
    pub fields: Map<String, Value>,
    /// Beta feature identifiers (Messages `anthropic-beta`), forwarded as a
    /// header to a native route that allows each of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub betas: Vec<String>,
}

/// Sampling and length controls.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Sampling {
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling mass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Stop sequences; empty imposes nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// The output cap, in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// A seed for repeatable sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// Penalty on repeated tokens, by frequency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f64>,
    /// Penalty on tokens already present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f64>,
    /// How many alternative choices the client asked for (Chat and
    /// Completions `n`), as it asked: `None` when it did not say. A
    /// canonical response holds one choice, so supplier encoders refuse
    /// any other number ([`Request::refuse_several_choices`]); what to answer
    /// a client that asks for more is its server's decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choices: Option<u32>,
    /// How many samples the client asked the server to draw and pick the
    /// best `choices` from (Completions `best_of`), as it asked. No
    /// supplier request carries it, so supplier encoders refuse any number
    /// but 1 ([`Request::refuse_several_choices`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_of: Option<u32>,
}

/// Reasoning controls. Effort is a free string: no default, no clamping.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Reasoning {
    /// The reasoning effort (`low`, `medium`, `high`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    /// Extended thinking, where the protocol configures it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<ThinkingConfig>,
    /// Responses-style summary request (`reasoning.summary`): sent to
    /// Responses suppliers. Chat and Messages have no field for it, and
    /// Responses clients send `"auto"` on every request, so their encoders
    /// drop it (a preference, not a refusal): a Chat route produces no
    /// summary, a Messages route returns its own summarized thinking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// Extended thinking (Messages `thinking`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThinkingConfig {
    /// On, off or adaptive.
    pub mode: ThinkingMode,
    /// The thinking budget, in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u32>,
    /// How thinking is shown (Messages `display`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
}

/// Whether the model thinks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThinkingMode {
    /// No thinking.
    Disabled,
    /// Thinking within the budget.
    Enabled,
    /// The model decides.
    Adaptive,
}

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Role {
    /// The system prompt.
    System,
    /// Developer instructions (OpenAI `developer`).
    Developer,
    /// The user.
    User,
    /// The model.
    Assistant,
    /// A tool's result (Chat `tool`).
    Tool,
}

impl Role {
    /// The role's lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// The parts of the message. A plain string becomes one `Text` part.
    pub content: Vec<ContentPart>,
    /// Whether the wire message carried its content as a bare string (or
    /// null), so an encoder of the same shape can reproduce it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub content_was_string: bool,
    /// The participant's name, where the protocol has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Message {
    /// A message of one text part.
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Message {
            role,
            content: vec![ContentPart::Text {
                text: text.into(),
                cache_control: None,
            }],
            content_was_string: true,
            name: None,
        }
    }

    /// The concatenated text parts (for estimates and simple encoders).
    pub fn joined_text(&self) -> String {
        let mut out = String::new();
        for part in &self.content {
            if let ContentPart::Text { text, .. } = part {
                out.push_str(text);
            }
        }
        out
    }
}

/// A prompt-cache breakpoint (Anthropic `cache_control`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheControl {
    /// `ephemeral` today; kept open.
    #[serde(rename = "type")]
    pub kind: String,
    /// `5m` (default) or `1h`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<String>,
}

/// One part of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ContentPart {
    /// Text.
    Text {
        /// The text.
        text: String,
        /// A prompt-cache marker ending here.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// An image.
    Image {
        /// Where the image is.
        source: ImageSource,
        /// The detail level asked for (OpenAI `detail`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
        /// A prompt-cache marker ending here.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// An assistant's call of a client tool. `arguments` is JSON text as the
    /// model produced it (it may be partial or invalid JSON; never reparsed).
    ToolCall {
        /// The call's ID.
        id: String,
        /// The tool's name.
        name: String,
        /// The arguments, a JSON text.
        arguments: String,
    },
    /// The result of a tool call, sent back by the client.
    ToolResult {
        /// The call it answers.
        tool_call_id: String,
        /// The result's content.
        content: Vec<ContentPart>,
        /// Whether the tool failed.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
        /// A prompt-cache marker ending here.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// The model's earlier reasoning, replayed.
    Thinking {
        /// The reasoning text.
        text: String,
        /// Its supplier's signature.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Encrypted reasoning, replayed as is.
    RedactedThinking {
        /// The opaque data.
        data: String,
    },
    /// A non-media part the router does not interpret, passed through to a
    /// route of the protocol it came from.
    Opaque {
        /// The protocol it belongs to.
        protocol: Protocol,
        /// The part as the client sent it.
        value: Value,
    },
}

/// Where an image is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ImageSource {
    /// `https:`, `http:` or `data:` URL.
    Url {
        /// The URL.
        url: String,
    },
    /// Inline.
    Base64 {
        /// Its media type (`image/png`, ...).
        media_type: String,
        /// The bytes, base64.
        data: String,
    },
    /// A temporary upload of this account (`file_id`).
    Upload {
        /// The upload's ID.
        file_id: String,
        /// Where the reference sits in the client's own body
        /// (`input[1].content[0].file_id`), so that one the server cannot
        /// resolve is named in the client's terms. Never sent to a
        /// supplier.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        param: String,
    },
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// The tool's name.
    pub name: String,
    /// What it does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments (always an object schema).
    pub parameters: Value,
    /// Whether its arguments must match the schema exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
    /// A prompt-cache marker ending here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<CacheControl>,
}

/// Whether and which tool the model must call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// No tool.
    None,
    /// The model must call some tool (Chat `required`, Messages `any`).
    Required,
    /// This tool.
    Tool {
        /// The tool's name.
        name: String,
    },
}

/// Structured output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseFormat {
    /// Free text.
    Text,
    /// Any JSON object.
    JsonObject,
    /// JSON matching a schema.
    JsonSchema {
        /// The schema's name.
        name: String,
        /// The JSON schema (`null`: none given).
        schema: Value,
        /// Whether the schema is enforced exactly.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        strict: Option<bool>,
        /// What the output is, for the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    },
}

impl Request {
    /// Derive what routing must honour. Called once, after parsing.
    pub fn requirements(&self) -> Requirements {
        let mut req = Requirements::default();
        if !self.tools.is_empty() {
            req.require(Capability::Tools);
        }
        if !self.sampling.stop.is_empty() {
            req.require(Capability::Stop);
        }
        if self.reasoning.effort.is_some() {
            req.require(Capability::Reasoning);
        }
        if matches!(&self.reasoning.thinking, Some(t) if t.mode != ThinkingMode::Disabled) {
            req.require(Capability::Thinking);
        }
        if matches!(
            self.response_format,
            Some(ResponseFormat::JsonObject | ResponseFormat::JsonSchema { .. })
        ) {
            req.require(Capability::ResponseFormat);
        }
        if self.stream {
            req.require(Capability::Streaming);
        }
        if self.has_images() {
            req.require(Capability::Vision);
        }
        req.temperature_above_one = self.sampling.temperature.is_some_and(|t| t > 1.0);
        req.native_only = self.native_only.is_some();
        req.penalties = [
            self.sampling.frequency_penalty,
            self.sampling.presence_penalty,
        ]
        .into_iter()
        .flatten()
        .any(|p| p != 0.0);
        req
    }

    /// Whether any message holds an image.
    pub fn has_images(&self) -> bool {
        fn part_has_image(p: &ContentPart) -> bool {
            match p {
                ContentPart::Image { .. } => true,
                ContentPart::ToolResult { content, .. } => content.iter().any(part_has_image),
                _ => false,
            }
        }
        self.messages
            .iter()
            .any(|m| m.content.iter().any(part_has_image))
    }

    /// A rough, conservative count of the characters of input, for estimates.
    pub fn input_chars(&self) -> usize {
        fn part_chars(p: &ContentPart) -> usize {
            match p {
                ContentPart::Text { text, .. } => text.len(),
                ContentPart::ToolCall {
                    name, arguments, ..
                } => name.len() + arguments.len(),
                ContentPart::ToolResult { content, .. } => content.iter().map(part_chars).sum(),
                ContentPart::Thinking { text, signature } => {
                    text.len() + signature.as_ref().map_or(0, String::len)
                }
                ContentPart::RedactedThinking { data } => data.len(),
                ContentPart::Opaque { value, .. } => value.to_string().len(),
                ContentPart::Image { .. } => 0,
            }
        }
        let messages: usize = self
            .messages
            .iter()
            .map(|m| 8 + m.content.iter().map(part_chars).sum::<usize>())
            .sum();
        let tools: usize = self
            .tools
            .iter()
            .map(|t| {
                t.name.len()
                    + t.description.as_ref().map_or(0, String::len)
                    + t.parameters.to_string().len()
            })
            .sum();
        messages + tools
    }
}
