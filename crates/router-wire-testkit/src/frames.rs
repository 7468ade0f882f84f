//! SSE frames as a stream decoder receives them, built from JSON values.

use router_canonical::sse::Frame;
use serde_json::Value;

/// An unnamed `data:` frame (Chat and Completions streams).
pub fn data(data: Value) -> Frame {
    Frame {
        event: None,
        data: data.to_string(),
    }
}

/// The `data: [DONE]` frame that ends a Chat or Completions stream.
pub fn done() -> Frame {
    Frame {
        event: None,
        data: "[DONE]".into(),
    }
}

/// A frame named `event` (Messages streams).
pub fn named(event: &str, data: Value) -> Frame {
    Frame {
        event: Some(event.to_owned()),
        data: data.to_string(),
    }
}

/// A frame named after its own `type` field (Responses streams).
pub fn typed(data: Value) -> Frame {
    Frame {
        event: data["type"].as_str().map(str::to_owned),
        data: data.to_string(),
    }
}

/// The payloads of an encoded stream of unnamed `data:` frames.
pub fn data_lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8(bytes.to_vec())
        .unwrap()
        .split("\n\n")
        .filter(|s| !s.is_empty())
        .map(|s| s.strip_prefix("data: ").unwrap().to_owned())
        .collect()
}
