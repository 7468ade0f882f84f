//! Server-sent events framing: a bounded incremental decoder and an encoder.
//!
//! Protocol-neutral: it knows `event:` and `data:` lines, not JSON. The
//! decoder caps its buffer so a supplier cannot make the router hold an
//! unbounded line (a typed error instead).

/// One SSE frame. `data` joins multiple `data:` lines with `\n`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Frame {
    pub event: Option<String>,
    pub data: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    #[error("SSE frame exceeds {limit} bytes")]
    FrameTooLarge { limit: usize },
    #[error("SSE stream is not valid UTF-8")]
    InvalidUtf8,
}

/// Incremental decoder: feed bytes as they arrive, take complete frames.
#[derive(Debug)]
pub struct Decoder {
    buf: Vec<u8>,
    limit: usize,
    event: Option<String>,
    data: Option<String>,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new(4 * 1024 * 1024)
    }
}

impl Decoder {
    pub fn new(limit: usize) -> Self {
        Decoder {
            buf: Vec::new(),
            limit,
            event: None,
            data: None,
        }
    }

    /// Feed a chunk; complete frames are pushed to `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<Frame>) -> Result<(), SseError> {
        self.buf.extend_from_slice(chunk);
        let mut start = 0;
        while let Some(pos) = self.buf[start..].iter().position(|&b| b == b'\n') {
            let end = start + pos;
            let mut line = &self.buf[start..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            let line = std::str::from_utf8(line)
                .map_err(|_| SseError::InvalidUtf8)?
                .to_owned();
            self.line(&line, out);
            start = end + 1;
        }
        self.buf.drain(..start);
        let pending = self.buf.len() + self.data.as_ref().map_or(0, String::len);
        if pending > self.limit {
            return Err(SseError::FrameTooLarge { limit: self.limit });
        }
        Ok(())
    }

    /// True when bytes of an unfinished frame are buffered (a truncated stream).
    pub fn has_partial(&self) -> bool {
        !self.buf.is_empty() || self.data.is_some()
    }

    fn line(&mut self, line: &str, out: &mut Vec<Frame>) {
        if line.is_empty() {
            if let Some(data) = self.data.take() {
                out.push(Frame {
                    event: self.event.take(),
                    data,
                });
            } else {
                self.event = None;
            }
            return;
        }
        if line.starts_with(':') {
            return; // comment / keep-alive
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => match &mut self.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            _ => {} // id, retry and unknown fields carry nothing we use
        }
    }
}

/// Append one frame in wire form to `out`.
pub fn encode(event: Option<&str>, data: &str, out: &mut Vec<u8>) {
    if let Some(event) = event {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(event.as_bytes());
        out.push(b'\n');
    }
    for line in data.split('\n') {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_split_across_chunks() {
        let mut d = Decoder::default();
        let mut out = Vec::new();
        d.feed(b"event: a\nda", &mut out).unwrap();
        assert!(out.is_empty());
        d.feed(b"ta: {\"x\":1}\r\n\r\ndata: [DONE]\n\n: ping\n\n", &mut out)
            .unwrap();
        assert_eq!(
            out,
            vec![
                Frame {
                    event: Some("a".into()),
                    data: "{\"x\":1}".into()
                },
                Frame {
                    event: None,
                    data: "[DONE]".into()
                }
            ]
        );
        assert!(!d.has_partial());
    }

    #[test]
    fn oversized_frame_is_an_error() {
        let mut d = Decoder::new(16);
        let mut out = Vec::new();
        assert_eq!(
            d.feed(&[b'x'; 17], &mut out),
            Err(SseError::FrameTooLarge { limit: 16 })
        );
    }

    #[test]
    fn encode_round_trips() {
        let mut bytes = Vec::new();
        encode(
            Some("message_stop"),
            "{\"type\":\"message_stop\"}",
            &mut bytes,
        );
        let mut d = Decoder::default();
        let mut out = Vec::new();
        d.feed(&bytes, &mut out).unwrap();
        assert_eq!(out[0].event.as_deref(), Some("message_stop"));
        assert_eq!(out[0].data, "{\"type\":\"message_stop\"}");
    }
}
