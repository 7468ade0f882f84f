//! [`RecordedCall`]: one protocol request as the mock supplier received it.

use std::time::Instant;

use serde_json::{Map, Value, json};

/// One request to a protocol endpoint (Chat Completions, Messages or
/// Responses), recorded before its script runs.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCall {
    /// Request path without the query, e.g. `/v1/chat/completions`,
    /// `/v1/messages` or `/v1/responses`: it tells which protocol was called.
    pub path: String,
    /// The query string as sent (without `?`), if any: Azure's
    /// `api-version`, Gemini's `alt=sse`.
    pub query: Option<String>,
    /// Request headers in arrival order; names are lowercase. Values that are
    /// not UTF-8 are converted lossily.
    pub headers: Vec<(String, String)>,
    /// The request body as JSON. A body that is not JSON is recorded as a JSON
    /// string holding its (lossy UTF-8) text; an empty body as `null`.
    pub body: Value,
    /// When the request body had been read.
    pub received_at: Instant,
}

impl RecordedCall {
    /// The request's `model`, if it is a string; for the dialects that put
    /// the model in the path (Gemini `…/models/{model}:…`, Bedrock
    /// `…/model/{model}/invoke…`), that path segment as sent.
    pub fn model(&self) -> Option<&str> {
        self.body
            .get("model")
            .and_then(Value::as_str)
            .or_else(|| model_in_path(&self.path))
    }

    /// The first value of a header, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The form `GET /_mock/calls` returns: `{"path", "model", "headers",
    /// "body"}`, where `model` is [`RecordedCall::model`] (or null) and
    /// `headers` an object from lowercase name to value (repeated headers
    /// joined with `", "`).
    pub(crate) fn to_control_json(&self) -> Value {
        let mut headers = Map::new();
        for (name, value) in &self.headers {
            match headers.get_mut(name) {
                Some(Value::String(existing)) => {
                    existing.push_str(", ");
                    existing.push_str(value);
                }
                _ => {
                    headers.insert(name.clone(), Value::String(value.clone()));
                }
            }
        }
        json!({ "path": self.path, "model": self.model(), "headers": headers, "body": self.body })
    }
}

/// The model segment of a Gemini or Bedrock path.
fn model_in_path(path: &str) -> Option<&str> {
    if let Some((_, tail)) = path.rsplit_once("/models/") {
        return tail.split_once(':').map(|(model, _)| model);
    }
    let (_, tail) = path.rsplit_once("/model/")?;
    tail.split_once('/').map(|(model, _)| model)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_json_joins_repeated_headers() {
        let call = RecordedCall {
            query: None,
            path: "/v1/chat/completions".into(),
            headers: vec![
                ("x-a".into(), "1".into()),
                ("x-b".into(), "2".into()),
                ("x-a".into(), "3".into()),
            ],
            body: json!({"model": "m"}),
            received_at: Instant::now(),
        };
        assert_eq!(call.model(), Some("m"));
        assert_eq!(call.header("X-B"), Some("2"));
        assert_eq!(
            call.to_control_json(),
            json!({
                "path": "/v1/chat/completions",
                "model": "m",
                "headers": {"x-a": "1, 3", "x-b": "2"},
                "body": {"model": "m"},
            })
        );
    }
}
