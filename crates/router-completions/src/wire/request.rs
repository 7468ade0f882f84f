//! The body of `POST /v1/completions` as a client sends it.
//!
//! Types here check JSON *shape* only (serde reports the path of a wrong
//! type); value rules (ranges, the constant `n`/`best_of`, the unsupported
//! `logprobs`/`suffix`, the one-string prompt) live in `from_wire.rs` so
//! every rejection names its parameter the same way.

use router_canonical::parse::{StringOrSeq, string_or_seq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
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
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(required = true, nullable = false))]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(required = true, nullable = false))]
    pub prompt: Option<Prompt>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub echo: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_of: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Value>,
    /// Insertion is not supported: `null`, `""` or absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, max_length = 0))]
    pub suffix: Option<Value>,
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Every other top-level property: the common routing fields, then
    /// anything unknown (accepted and dropped, E-12).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `prompt` in each shape OpenAI defines. Only [`Prompt::Text`] and a
/// one-element [`Prompt::Texts`] are served (E-03); the validator names the
/// others. An array is classified here rather than rejected so that every
/// prompt error carries `param: "prompt"` (not `prompt[0]`).
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    Text(String),
    Texts(Vec<String>),
    /// `[1, 2, 3]`: token IDs.
    Tokens(Vec<Value>),
    /// `[[1, 2], ...]`: a batch of token-ID prompts.
    TokenBatches(Vec<Value>),
    /// An array mixing kinds, or holding objects, booleans or nulls.
    Mixed(Vec<Value>),
}

impl Serialize for Prompt {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Prompt::Text(text) => s.serialize_str(text),
            Prompt::Texts(texts) => texts.serialize(s),
            Prompt::Tokens(items) | Prompt::TokenBatches(items) | Prompt::Mixed(items) => {
                items.serialize(s)
            }
        }
    }
}

#[cfg(feature = "openapi")]
router_canonical::impl_to_schema!(Prompt as "CompletionPrompt", uses [], {
    use router_canonical::openapi::{array_of, one_of, string};
    one_of(
        [string(), array_of(string())],
        "A string, or an array of exactly one string (token IDs and batches are refused).",
    )
});

impl<'de> Deserialize<'de> for Prompt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(
            match string_or_seq::<_, Value>(d, "a string or an array of one string")? {
                StringOrSeq::String(text) => Prompt::Text(text),
                StringOrSeq::Seq(items) => classify(items),
            },
        )
    }
}

/// Sort an array prompt into the shape it has. An empty array is `Texts(vec![])`.
fn classify(items: Vec<Value>) -> Prompt {
    if items.iter().all(Value::is_string) {
        let texts = items
            .into_iter()
            .filter_map(|item| match item {
                Value::String(text) => Some(text),
                _ => None,
            })
            .collect();
        Prompt::Texts(texts)
    } else if items.iter().all(Value::is_number) {
        Prompt::Tokens(items)
    } else if items.iter().all(Value::is_array) {
        Prompt::TokenBatches(items)
    } else {
        Prompt::Mixed(items)
    }
}

/// `stop`: one string or an array of strings (`null` is the `None` around it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = CompletionStop))]
#[serde(untagged)]
pub enum Stop {
    One(String),
    Many(Vec<String>),
}

impl<'de> Deserialize<'de> for Stop {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(
            match string_or_seq(d, "a string, an array of strings, or null")? {
                StringOrSeq::String(one) => Stop::One(one),
                StringOrSeq::Seq(all) => Stop::Many(all),
            },
        )
    }
}

/// `stream_options`: `include_usage` is accepted; the usage chunk is always
/// sent, because it carries the cost (GP-04).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = CompletionStreamOptions))]
pub struct StreamOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_usage: Option<bool>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
