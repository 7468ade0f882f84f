//! Server-sent events framing: a bounded incremental decoder and an encoder.
//!
//! Protocol-neutral: it knows `event:` and `data:` lines, not JSON. The
//! decoder caps its buffer so a supplier cannot make the router hold an
//! unbounded line (a typed error instead).

/// One SSE frame. `data` joins multiple `data:` lines with `\n`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Frame {
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The `data:` lines, joined by newlines.
    pub data: String,
}

/// Why bytes are not a valid SSE stream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// A frame larger than the limit.
    #[error("SSE frame exceeds {limit} bytes")]
    FrameTooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// A frame is not UTF-8.
    #[error("SSE stream is not valid UTF-8")]
    InvalidUtf8,
}

/// The frame limit of [`Decoder::default`]: 4 MiB.
pub const DEFAULT_FRAME_LIMIT: usize = 4 * 1024 * 1024;

/// Incremental decoder: feed bytes as they arrive, take complete frames.
///
/// Lines end in LF, CRLF or a bare CR, as the SSE format allows, also when
/// a CRLF is split between two reads. `id:`, `retry:`, unknown fields and
/// `:` comments are skipped.
///
/// **Limits.** A frame (its event name and all its `data:` lines) and an
/// unfinished line may each hold at most `limit` bytes; more is
/// [`SseError::FrameTooLarge`], whether the frame arrives in many reads or
/// in one. The decoder therefore buffers at most about `limit` bytes plus
/// the read being decoded. After an error the decoder's state is
/// unspecified: drop it.
#[derive(Debug)]
pub struct Decoder {
    buf: Vec<u8>,
    limit: usize,
    event: Option<String>,
    data: Option<String>,
    /// The last line ended in CR: an LF first in the next read ends it too.
    after_cr: bool,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new(DEFAULT_FRAME_LIMIT)
    }
}

impl Decoder {
    /// A decoder refusing frames larger than `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Decoder {
            buf: Vec::new(),
            limit,
            event: None,
            data: None,
            after_cr: false,
        }
    }

    /// Feed a chunk; complete frames are pushed to `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<Frame>) -> Result<(), SseError> {
        self.buf.extend_from_slice(chunk);
        let mut start = 0;
        loop {
            if self.after_cr {
                match self.buf.get(start) {
                    Some(b'\n') => {
                        start += 1;
                        self.after_cr = false;
                    }
                    Some(_) => self.after_cr = false,
                    None => break,
                }
            }
            let Some(pos) = self.buf[start..]
                .iter()
                .position(|&b| b == b'\n' || b == b'\r')
            else {
                break;
            };
            let end = start + pos;
            self.after_cr = self.buf[end] == b'\r';
            let line = std::str::from_utf8(&self.buf[start..end])
                .map_err(|_| SseError::InvalidUtf8)?
                .to_owned();
            start = end + 1;
            self.line(&line, out)?;
        }
        self.buf.drain(..start);
        if self.buf.len() + self.frame_len() > self.limit {
            return Err(SseError::FrameTooLarge { limit: self.limit });
        }
        Ok(())
    }

    /// True when bytes of an unfinished frame are buffered (a truncated stream).
    pub fn has_partial(&self) -> bool {
        !self.buf.is_empty() || self.data.is_some()
    }

    /// Bytes of the frame being assembled.
    fn frame_len(&self) -> usize {
        self.data.as_ref().map_or(0, String::len) + self.event.as_ref().map_or(0, String::len)
    }

    fn line(&mut self, line: &str, out: &mut Vec<Frame>) -> Result<(), SseError> {
        if line.is_empty() {
            if let Some(data) = self.data.take() {
                out.push(Frame {
                    event: self.event.take(),
                    data,
                });
            } else {
                self.event = None;
            }
            return Ok(());
        }
        if line.starts_with(':') {
            return Ok(()); // comment / keep-alive
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        if matches!(field, "event" | "data") && self.frame_len() + value.len() + 1 > self.limit {
            return Err(SseError::FrameTooLarge { limit: self.limit });
        }
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
        Ok(())
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
    fn a_frame_over_the_limit_is_refused_also_in_one_read() {
        // Two data lines of 10 bytes each: each line fits, the frame does not.
        let mut d = Decoder::new(16);
        let mut out = Vec::new();
        assert_eq!(
            d.feed(b"data: 0123456789\ndata: 0123456789\n\n", &mut out),
            Err(SseError::FrameTooLarge { limit: 16 })
        );
        assert!(out.is_empty(), "no oversized frame comes out");
        // At the limit it passes.
        let mut d = Decoder::new(16);
        d.feed(b"data: 0123456\ndata: 01234567\n\n", &mut out)
            .unwrap();
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn bare_cr_and_split_crlf_end_lines() {
        let mut d = Decoder::default();
        let mut out = Vec::new();
        d.feed(b"event: a\rdata: 1\r\r", &mut out).unwrap();
        assert_eq!(
            out,
            vec![Frame {
                event: Some("a".into()),
                data: "1".into()
            }]
        );
        // A CRLF split across reads is one line ending, not two.
        out.clear();
        d.feed(b"data: 2\r", &mut out).unwrap();
        d.feed(b"\ndata: 3\r\n\r\n", &mut out).unwrap();
        assert_eq!(
            out,
            vec![Frame {
                event: None,
                data: "2\n3".into()
            }]
        );
        assert!(!d.has_partial());
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
