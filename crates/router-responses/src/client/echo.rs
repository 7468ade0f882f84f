//! The request members a Responses `response` object repeats.
//!
//! OpenAI's `response` object echoes what the request set (`instructions`,
//! `max_output_tokens`, `reasoning`, `tools`, `tool_choice`, ...), so a
//! client reading the reply sees the settings it ran with. The canonical
//! [`Request`](router_canonical::Request) is protocol-neutral and does not
//! keep the client's spelling, so [`ResponsesClient`](crate::ResponsesClient)
//! records the echo at parse time and its reply and stream encoders write it.

use crate::convert::ToolNamespaces;
use crate::wire::request::{ResponsesRequest, TextFormat};
use crate::wire::response::object;
use serde_json::{Map, Value};

/// What a Responses reply needs from the request besides its canonical
/// form: the [`ClientCodec::Extra`](router_canonical::ClientCodec::Extra)
/// of [`ResponsesClient`](crate::ResponsesClient).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ResponsesExtra {
    /// The request's namespaced functions, to name a call as declared.
    pub namespaces: ToolNamespaces,
    /// The request members the `response` object repeats.
    pub echo: RequestEcho,
}

impl ResponsesExtra {
    /// An extra with these namespaces and this echo.
    pub fn new(namespaces: ToolNamespaces, echo: RequestEcho) -> Self {
        ResponsesExtra { namespaces, echo }
    }
}

/// The request members a `response` object repeats, as the client sent
/// them. [`Default`] is a request that set none of them: the reply then
/// shows the protocol's defaults (`tool_choice: "auto"`, `tools: []`,
/// `reasoning: {effort: null, summary: null}`, ...).
///
/// `store`, `background` and `previous_response_id` are always `false`,
/// `false` and `null` (the codec refuses anything else), and `truncation`
/// is always `disabled`: the input is never truncated to fit.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct RequestEcho {
    /// `instructions`.
    pub instructions: Option<String>,
    /// `max_output_tokens`.
    pub max_output_tokens: Option<u32>,
    /// `parallel_tool_calls` (`true` when not set).
    pub parallel_tool_calls: Option<bool>,
    /// `reasoning.effort`, or its alias `reasoning_effort`.
    pub reasoning_effort: Option<String>,
    /// `reasoning.summary` (or the deprecated `reasoning.generate_summary`).
    pub reasoning_summary: Option<String>,
    /// `temperature`.
    pub temperature: Option<f64>,
    /// `top_p`.
    pub top_p: Option<f64>,
    /// `text.format`, as sent.
    pub text_format: Option<Value>,
    /// `text.verbosity`.
    pub verbosity: Option<String>,
    /// `tool_choice`, as sent.
    pub tool_choice: Option<Value>,
    /// `tools`, each as sent.
    pub tools: Vec<Value>,
    /// `user`.
    pub user: Option<String>,
    /// `safety_identifier`.
    pub safety_identifier: Option<String>,
    /// `metadata`, as sent.
    pub metadata: Option<Value>,
    /// `top_logprobs`, as sent.
    pub top_logprobs: Option<Value>,
    /// `prompt_cache_key`.
    pub prompt_cache_key: Option<String>,
}

impl RequestEcho {
    /// The echo of a request body, read before the body is converted.
    pub fn of(request: &ResponsesRequest) -> Self {
        let reasoning = request.reasoning.as_ref();
        let text = request.text.as_ref();
        RequestEcho {
            instructions: request.instructions.clone(),
            max_output_tokens: request.max_output_tokens,
            parallel_tool_calls: request.parallel_tool_calls,
            reasoning_effort: reasoning
                .and_then(|r| r.effort.clone())
                .or_else(|| request.reasoning_effort.clone()),
            reasoning_summary: reasoning
                .and_then(|r| r.summary.clone().or_else(|| r.generate_summary.clone())),
            temperature: request.temperature,
            top_p: request.top_p,
            text_format: text
                .and_then(|t| t.format.as_ref())
                .map(|format: &TextFormat| to_value(format)),
            verbosity: text.and_then(|t| t.verbosity.clone()),
            tool_choice: request.tool_choice.as_ref().map(to_value),
            tools: request.tools.iter().flatten().map(to_value).collect(),
            user: request.user.clone(),
            safety_identifier: request.safety_identifier.clone(),
            metadata: request
                .extra
                .get("metadata")
                .filter(|m| m.is_object())
                .cloned(),
            top_logprobs: request
                .extra
                .get("top_logprobs")
                .filter(|n| n.is_u64())
                .cloned(),
            prompt_cache_key: request
                .extra
                .get("prompt_cache_key")
                .and_then(Value::as_str)
                .map(str::to_owned),
        }
    }

    /// `reasoning` of the `response` object.
    pub(crate) fn reasoning(&self) -> Value {
        object([
            ("effort", optional(self.reasoning_effort.clone())),
            ("summary", optional(self.reasoning_summary.clone())),
        ])
    }

    /// `text` of the `response` object.
    pub(crate) fn text(&self) -> Value {
        let mut text = Map::new();
        text.insert(
            "format".to_owned(),
            self.text_format
                .clone()
                .unwrap_or_else(|| object([("type", Value::from("text"))])),
        );
        if let Some(verbosity) = &self.verbosity {
            text.insert("verbosity".to_owned(), Value::from(verbosity.as_str()));
        }
        Value::Object(text)
    }

    /// `tool_choice` of the `response` object.
    pub(crate) fn tool_choice(&self) -> Value {
        self.tool_choice
            .clone()
            .unwrap_or_else(|| Value::from("auto"))
    }
}

fn optional(value: Option<String>) -> Value {
    value.map_or(Value::Null, Value::from)
}

/// The wire types serialize infallibly (no non-string map keys).
fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}
