//! The usage a reply reports when its script gives none: an estimate from
//! the characters of the request's text and of the reply's text.

use serde_json::Value;

use crate::script::{MockReply, MockUsage};

/// The usage a reply reports: the scripted one, or the estimate
/// (prompt = `prompt_chars` / 4 + 1, completion = text characters / 4 + 1).
pub(crate) fn effective_usage(reply: &MockReply, prompt_chars: usize) -> MockUsage {
    reply.usage.unwrap_or_else(|| {
        MockUsage::tokens(
            estimate_tokens(prompt_chars),
            estimate_tokens(reply.text.chars().count()),
        )
    })
}

fn estimate_tokens(chars: usize) -> u64 {
    u64::try_from(chars / 4)
        .unwrap_or(u64::MAX)
        .saturating_add(1)
}

/// Characters of text in a `content` (or `system`, `instructions`, `input`)
/// value: a string, or an array of parts whose `text` fields count.
/// Anything else counts nothing.
pub(crate) fn text_chars(content: &Value) -> usize {
    match content {
        Value::String(text) => text.chars().count(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .map(|text| text.chars().count())
            .sum(),
        _ => 0,
    }
}

/// Characters of text in the `content` of every item of an array field
/// (`messages`, `input`); 0 when the field is absent or not an array.
pub(crate) fn content_chars_of(body: &Value, field: &str) -> usize {
    body.get(field)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|item| item.get("content"))
                .map(text_chars)
                .sum()
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_is_counted_in_strings_and_parts() {
        assert_eq!(text_chars(&json!("abc")), 3);
        assert_eq!(
            text_chars(&json!([{"type": "text", "text": "ab"}, {"type": "image"}, {"text": "Zü"}])),
            4
        );
        assert_eq!(text_chars(&json!(5)), 0);
        let body = json!({"messages": [{"content": "1234"}, {"role": "x"}, {"content": [{"text": "56"}]}]});
        assert_eq!(content_chars_of(&body, "messages"), 6);
        assert_eq!(content_chars_of(&body, "input"), 0);
    }

    #[test]
    fn usage_is_estimated_when_not_scripted() {
        let usage = effective_usage(&MockReply::text("abcdefgh"), 12);
        assert_eq!(usage, MockUsage::tokens(4, 3));
        let scripted = MockReply {
            usage: Some(MockUsage::tokens(9, 9)),
            ..MockReply::default()
        };
        assert_eq!(effective_usage(&scripted, 100), MockUsage::tokens(9, 9));
    }
}
