//! Local input-token estimates for `count_tokens`.
//!
//! The estimate tokenizes every piece of text a supplier would see (system
//! prompt, messages, tool calls and results, tool definitions) with the
//! `o200k_base` byte-pair encoding, and adds a small fixed framing cost per
//! message and per tool, the way chat templates wrap them.
//!
//! When tools are defined it adds the tool-use system prompt a supplier
//! inserts (Anthropic's published 346 tokens), which dominates small requests.
//!
//! How good it is: for models that use `o200k_base` (the current OpenAI
//! families) the text part is the supplier's own tokenization, so only the
//! framing constants are approximate (a few tokens per message; the tool-use
//! prompt makes requests with tools an overestimate there). Anthropic's
//! tokenizer is not public; `o200k_base` is a different vocabulary, so for
//! Claude models the number is an estimate whose error depends on the text.
//! Against the real counts Anthropic publishes in its token-counting guide
//! (`tests/published_counts.rs` keeps these figures true):
//!
//! | request | Claude | estimate | error |
//! |---|---|---|---|
//! | system prompt + one user turn | 14 | 16 | +2 (+14%) |
//! | one tool + one user turn | 403 | 412 | +9 (+2%) |
//!
//! Longer English prose and code tend to come out lower than Claude's count
//! (Claude's vocabulary splits text into more tokens than `o200k_base`;
//! Anthropic's published API guidance puts OpenAI-tokenizer undercounts at about 15-20% for
//! typical text, more for code and non-English), so treat the figure as a
//! sizing estimate, never a bill. That is why every answer says
//! `x-ci-token-count-estimated: true`. The count is monotonic in the input:
//! more text never yields fewer tokens.
//!
//! ```
//! use router_canonical::{Message, Request, Role};
//! let short = Request { messages: vec![Message::text(Role::User, "hello there")], ..Default::default() };
//! let long = Request { messages: vec![Message::text(Role::User, "hello there ".repeat(10))], ..Default::default() };
//! assert!(router_tokens::estimate_input_tokens(&long) > router_tokens::estimate_input_tokens(&short));
//! ```

#![warn(unreachable_pub)]

use router_canonical::{ContentPart, Request};
use tiktoken_rs::CoreBPE;

/// Framing a chat template adds around each message (role markers).
const TOKENS_PER_MESSAGE: u64 = 3;
/// Framing around each tool definition.
const TOKENS_PER_TOOL: u64 = 8;
/// The priming of the assistant's reply.
const REPLY_PRIMING: u64 = 3;
/// The system prompt a supplier adds when a request defines tools, counted
/// in its input: Anthropic publishes 346 tokens for current Claude models
/// with `tool_choice` auto or none (313 with any or a named tool). The
/// larger figure is used: for context-size gating an overestimate is safe.
const TOOL_USE_SYSTEM_PROMPT: u64 = 346;

fn encoder() -> &'static CoreBPE {
    tiktoken_rs::o200k_base_singleton()
}

fn text_tokens(text: &str) -> u64 {
    if text.is_empty() {
        0
    } else {
        encoder().encode_ordinary(text).len() as u64
    }
}

fn part_tokens(part: &ContentPart) -> u64 {
    match part {
        ContentPart::Text { text, .. } => text_tokens(text),
        ContentPart::ToolCall {
            name, arguments, ..
        } => text_tokens(name) + text_tokens(arguments),
        ContentPart::ToolResult { content, .. } => content.iter().map(part_tokens).sum(),
        ContentPart::Thinking { text, .. } => text_tokens(text),
        // Media and opaque history are rejected before counting (CF-04); if
        // one slips through it is counted by its JSON text, never as zero.
        ContentPart::Image { .. }
        | ContentPart::RedactedThinking { .. }
        | ContentPart::Opaque { .. } => {
            text_tokens(&serde_json::to_string(part).unwrap_or_default())
        }
        _ => text_tokens(&serde_json::to_string(part).unwrap_or_default()),
    }
}

/// Estimated input tokens of `request` as a supplier would count them.
pub fn estimate_input_tokens(request: &Request) -> u64 {
    let messages: u64 = request
        .messages
        .iter()
        .map(|m| TOKENS_PER_MESSAGE + m.content.iter().map(part_tokens).sum::<u64>())
        .sum();
    let tools: u64 = request
        .tools
        .iter()
        .map(|t| {
            TOKENS_PER_TOOL
                + text_tokens(&t.name)
                + t.description.as_deref().map_or(0, text_tokens)
                + text_tokens(&t.parameters.to_string())
        })
        .sum();
    let tool_use = if request.tools.is_empty() {
        0
    } else {
        TOOL_USE_SYSTEM_PROMPT
    };
    messages + tools + tool_use + REPLY_PRIMING
}

/// Load the encoder now, so the first count does not pay for it.
pub fn warm_up() {
    let _ = encoder();
}

#[cfg(test)]
mod tests {
    use super::*;
    use router_canonical::{Message, Role, Tool};

    fn user(text: &str) -> Request {
        Request {
            messages: vec![Message::text(Role::User, text)],
            ..Default::default()
        }
    }

    #[test]
    fn known_text_counts_exactly() {
        // "hello world" is two o200k tokens; plus message framing and priming.
        assert_eq!(estimate_input_tokens(&user("hello world")), 2 + 3 + 3);
        assert_eq!(estimate_input_tokens(&user("")), 3 + 3);
    }

    #[test]
    fn longer_input_never_counts_fewer_tokens() {
        // D-42: monotonic in input size.
        let base = "The quick brown fox jumps over the lazy dog. ";
        let one = estimate_input_tokens(&user(base));
        let ten = estimate_input_tokens(&user(&base.repeat(10)));
        assert!(ten >= 9 * (one - 6), "{one} vs {ten}");
    }

    #[test]
    fn tools_and_system_are_counted() {
        let mut request = user("hi");
        let bare = estimate_input_tokens(&request);
        request
            .messages
            .insert(0, Message::text(Role::System, "You are terse."));
        let with_system = estimate_input_tokens(&request);
        assert!(with_system > bare);
        request.tools.push(Tool {
            name: "get_weather".into(),
            description: Some("Weather for a city".into()),
            parameters: serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}}}),
            strict: None,
            cache_control: None,
        });
        assert!(estimate_input_tokens(&request) > with_system + TOKENS_PER_TOOL);
    }
}
