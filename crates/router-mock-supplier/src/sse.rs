//! Server-sent events: how one event is framed, and how reply text is cut
//! into the pieces a stream carries.

use bytes::Bytes;
use serde_json::Value;

/// One unnamed event carrying a JSON value (Chat Completions).
pub(crate) fn data_event(value: &Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}

/// One event named after the `type` of its JSON payload (Messages and
/// Responses), so that the event name always equals `data.type`.
pub(crate) fn typed_event(value: &Value) -> Bytes {
    let name = value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Bytes::from(format!("event: {name}\ndata: {value}\n\n"))
}

/// Splits text into pieces that each end after a whitespace character, so
/// that their concatenation is the text exactly.
pub(crate) fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split_inclusive(char::is_whitespace)
}

/// Splits text into pieces of at most `max_chars` characters.
pub(crate) fn fragments(text: &str, max_chars: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    for (count, (offset, _)) in text.char_indices().enumerate() {
        if count > 0 && count % max_chars == 0 {
            pieces.push(&text[start..offset]);
            start = offset;
        }
    }
    if start < text.len() {
        pieces.push(&text[start..]);
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fragments_rejoin_exactly() {
        let text = "{\"city\": \"Zürich\", \"days\": 3}";
        let pieces = fragments(text, 8);
        assert!(pieces.len() > 2);
        assert!(pieces.iter().all(|piece| piece.chars().count() <= 8));
        assert_eq!(pieces.concat(), text);
        assert!(fragments("", 8).is_empty());
    }

    #[test]
    fn words_rejoin_exactly() {
        let pieces: Vec<&str> = words("one  two\nthree").collect();
        assert_eq!(pieces, ["one ", " ", "two\n", "three"]);
        assert_eq!(words("").count(), 0);
    }

    #[test]
    fn events_are_framed() {
        let value = json!({"type": "ping"});
        assert_eq!(&data_event(&value)[..], b"data: {\"type\":\"ping\"}\n\n");
        assert_eq!(
            &typed_event(&value)[..],
            b"event: ping\ndata: {\"type\":\"ping\"}\n\n"
        );
    }
}
