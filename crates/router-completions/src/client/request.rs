//! Wire -> canonical: validate a client's Completions body into the canonical
//! request that rides the Chat path.
//!
//! Every rejection is a 400 `invalid_parameter` whose `param` is the path of
//! the offending field, made here before any routing or network work. Shape
//! errors come from `serde_path_to_error`; value rules are checked by hand
//! below.

use crate::client::CompletionRequest;
use crate::wire::request::{CompletionBody, Prompt, Stop};
use router_canonical::BodyExtensions;
use router_canonical::parse::{self, OpenAiSampling};
use router_canonical::{ApiError, Message, Protocol, Reasoning, Request, Role, Sampling};
use serde_json::Value;

/// The output limit when the client sends no `max_tokens`.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 128;

/// The most stop sequences the legacy protocol takes.
pub(crate) const MAX_STOP_SEQUENCES: usize = 4;

pub(crate) fn request(
    body: &[u8],
    extensions: &mut dyn BodyExtensions,
) -> Result<CompletionRequest, ApiError> {
    convert(parse::request_body(body)?, extensions)
}

fn convert(
    wire: CompletionBody,
    extensions: &mut dyn BodyExtensions,
) -> Result<CompletionRequest, ApiError> {
    let CompletionBody {
        model,
        prompt,
        max_tokens,
        echo,
        n,
        best_of,
        logprobs,
        suffix,
        temperature,
        top_p,
        frequency_penalty,
        presence_penalty,
        seed,
        stop,
        stream,
        // `include_usage` is accepted; the usage chunk is always sent (GP-04).
        stream_options: _,
        user,
        mut extra,
    } = wire;
    // A gateway's own members first; the rest are judged as Completions'.
    extensions.take(&mut extra)?;
    // Everything else unknown is accepted and dropped (E-12, F-28).
    drop(extra);

    let model = model.ok_or_else(|| ApiError::invalid("model", "`model` is required"))?;
    let prompt = prompt_text(prompt)?;
    // `n` and `best_of` are carried (`Sampling::choices`, `best_of`): how
    // many samples to serve is the caller's decision.
    if logprobs.is_some() {
        return Err(ApiError::invalid(
            "logprobs",
            "`logprobs` is not supported: send null or omit it",
        ));
    }
    match suffix {
        None => {}
        Some(Value::String(s)) if s.is_empty() => {}
        Some(_) => {
            return Err(ApiError::invalid(
                "suffix",
                "`suffix` insertion is not supported: send null, \"\" or omit it",
            ));
        }
    }
    if max_tokens == Some(0) {
        return Err(ApiError::invalid(
            "max_tokens",
            "`max_tokens` must be an integer of at least 1",
        ));
    }

    let ranges = OpenAiSampling {
        temperature,
        top_p,
        frequency_penalty,
        presence_penalty,
    }
    .checked()?;
    let sampling = Sampling {
        seed,
        stop: stop_sequences(stop)?,
        max_output_tokens: Some(max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
        choices: n,
        best_of,
        ..ranges
    };

    let echo = echo.unwrap_or(false).then(|| prompt.clone());
    let request = Request {
        model,
        // The prompt is one user turn, sent as a plain string (E-09).
        messages: vec![Message::text(Role::User, prompt)],
        tools: Vec::new(),
        tool_choice: None,
        parallel_tool_calls: None,
        sampling,
        reasoning: Reasoning::default(),
        response_format: None,
        stream: stream.unwrap_or(false),
        end_user: user,
        native: None,
        inbound: Some(Protocol::Completions),
        native_only: None,
    };
    Ok(CompletionRequest { request, echo })
}

/// The one prompt string.
fn prompt_text(prompt: Option<Prompt>) -> Result<String, ApiError> {
    let reject = |message: &str| Err(ApiError::invalid("prompt", message));
    match prompt {
        None => reject("`prompt` is required"),
        Some(Prompt::Text(text)) => Ok(text),
        Some(Prompt::Seq(items)) => {
            let all = |kind: fn(&Value) -> bool| !items.is_empty() && items.iter().all(kind);
            if all(Value::is_number) || all(Value::is_array) {
                return reject("token-ID prompts are not supported: send the prompt as a string");
            }
            if items.len() > 1 && all(Value::is_string) {
                return reject(
                    "multiple prompts are not supported: send one string, or an array of exactly one string",
                );
            }
            match <[Value; 1]>::try_from(items) {
                Ok([Value::String(text)]) => Ok(text),
                _ => reject("`prompt` must be a string or an array of exactly one string"),
            }
        }
    }
}

/// `stop`: a string or up to four strings; `null` and `[]` impose nothing.
fn stop_sequences(stop: Option<Stop>) -> Result<Vec<String>, ApiError> {
    let all = match stop {
        None => Vec::new(),
        Some(Stop::Text(s)) => vec![s],
        Some(Stop::Seq(all)) => all,
    };
    if all.len() > MAX_STOP_SEQUENCES {
        return Err(ApiError::invalid(
            "stop",
            format!(
                "`stop` takes at most {MAX_STOP_SEQUENCES} sequences, got {}",
                all.len()
            ),
        ));
    }
    Ok(all)
}
