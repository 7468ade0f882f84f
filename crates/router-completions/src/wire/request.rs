//! The body of `POST /v1/completions` as a client sends it.
//!
//! Types here check JSON *shape* only (serde reports the path of a wrong
//! type); value rules (ranges, the unsupported
//! `logprobs`/`suffix`, the one-string prompt) live in `from_wire.rs` so
//! every rejection names its parameter the same way.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A Completions request body.
///
/// `model` and `prompt` are `Option` so that their absence is reported by
/// the validator with `param` set, like every other rule. `logprobs` and
/// `suffix` are kept as raw values: only `null` (and `""` for `suffix`) is
/// accepted, and the validator says why anything else is not.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(as = CompletionBody, description = "A legacy Completions request.")
)]
#[serde(default, expecting = "a JSON object")]
pub struct CompletionBody {
    /// The model to complete with (required).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(required = true, nullable = false))]
    pub model: Option<String>,
    /// The text to continue (required).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(required = true, nullable = false))]
    pub prompt: Option<Prompt>,
    /// The most tokens to generate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Put the prompt in front of the generated text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub echo: Option<bool>,
    /// How many completions to generate; only 1 is served.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n: Option<u32>,
    /// Server-side candidates; only 1 is served.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_of: Option<u32>,
    /// Log probabilities; only `null` is served.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Value>,
    /// Insertion is not supported: `null`, `""` or absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, max_length = 0))]
    pub suffix: Option<Value>,
    /// Sampling temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling mass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Penalty on repeated tokens, by frequency.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f64>,
    /// Penalty on tokens already present.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f64>,
    /// A seed for repeatable sampling, where the supplier honours one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// Sequences that end generation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop: Option<Stop>,
    /// Answer as a stream of server-sent events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Options of a streamed reply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    /// The caller's end-user identifier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Every other top-level property: the common routing fields, then
    /// anything unknown (accepted and dropped).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

router_canonical::string_or_seq! {
    /// `prompt` in each shape OpenAI defines: a string, or an array of
    /// strings, token IDs or token-ID batches. Only a string and an array of
    /// exactly one string are served; the validator names the others.
    /// An array is read whole, as JSON values, rather than rejected here so
    /// that every prompt error carries `param: "prompt"` (not `prompt[0]`).
    pub type Prompt = StringOrSeq<PromptKind> of Value;
    expecting "a string or an array of one string";
    schema "CompletionPrompt", "A string, or an array of exactly one string (token IDs and batches are refused).",
        element router_canonical::openapi::string(), uses [];
}

router_canonical::string_or_seq! {
    /// `stop`: one string or an array of strings (`null` is the `None` around it).
    pub type Stop = StringOrSeq<StopKind> of String;
    expecting "a string, an array of strings, or null";
    schema "CompletionStop", "`stop`: one string or an array of strings (`null` is the `None` around it).",
        element router_canonical::openapi::string(), uses [];
}

/// `stream_options`: `include_usage` is accepted; the usage chunk is always
/// sent, because it carries the cost.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = CompletionStreamOptions))]
pub struct StreamOptions {
    /// Accepted; the usage chunk is always sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_usage: Option<bool>,
    /// Any other member, accepted and dropped.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
