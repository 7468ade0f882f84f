//! AWS event-stream framing (`application/vnd.amazon.eventstream`), the
//! binary framing of Bedrock's streaming answers: a bounded incremental
//! decoder with both CRC checks, and an encoder (for mock suppliers and
//! tests).
//!
//! A message is `total length (u32) | headers length (u32) | prelude CRC32
//! | headers | payload | message CRC32`, big-endian, CRC-32 as in gzip.
//! A header is `name length (u8) | name | type (u8) | value`. Protocol
//! neutral: it knows headers and payload bytes, not JSON. A decoded message
//! reads as an SSE [`Frame`] (its event, exception or error type as the
//! event name, its payload as data), so a supplier codec decodes it with
//! the same [`SupplierStreamDecoder`](crate::SupplierStreamDecoder) trait.

use crate::checksum::crc32;
use crate::sse::Frame;

/// The error type of an AWS error reply, from its `x-amzn-ErrorType` header
/// (`ThrottlingException:http://internal.amazon.com/...` reads as
/// `ThrottlingException`).
pub fn amzn_error_type(headers: &dyn crate::header::HeaderSource) -> Option<String> {
    let value = headers.header("x-amzn-errortype")?;
    let kind = value.split(':').next().unwrap_or(value).trim();
    (!kind.is_empty()).then(|| kind.to_owned())
}

/// The largest message the decoder accepts by default: 4 MiB, as for SSE.
pub const DEFAULT_MESSAGE_LIMIT: usize = 4 * 1024 * 1024;

/// Prelude (12 bytes) plus the message CRC (4 bytes).
const OVERHEAD: usize = 16;

/// Why bytes are not a valid event stream.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventStreamError {
    /// A message larger than the limit.
    #[error("event-stream message of {length} bytes exceeds {limit} bytes")]
    TooLarge {
        /// The message's length, in bytes.
        length: usize,
        /// The limit.
        limit: usize,
    },
    /// The prelude's lengths do not fit together.
    #[error("event-stream prelude is inconsistent (total {total}, headers {headers})")]
    BadPrelude {
        /// The total length the prelude states.
        total: usize,
        /// The headers' length it states.
        headers: usize,
    },
    /// The prelude's CRC does not match.
    #[error("event-stream prelude CRC does not match")]
    PreludeCrc,
    /// The message's CRC does not match.
    #[error("event-stream message CRC does not match")]
    MessageCrc,
    /// A header is malformed (what is wrong).
    #[error("event-stream header is malformed: {0}")]
    BadHeader(&'static str),
    /// A header name or string is not UTF-8.
    #[error("event-stream payload is not valid UTF-8")]
    InvalidUtf8,
}

/// A header value (the ten types of the format).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderValue {
    /// A boolean.
    Bool(bool),
    /// A signed byte.
    Byte(i8),
    /// A 16-bit integer.
    Short(i16),
    /// A 32-bit integer.
    Int(i32),
    /// A 64-bit integer.
    Long(i64),
    /// Bytes.
    Bytes(Vec<u8>),
    /// A UTF-8 string.
    String(String),
    /// Milliseconds since the Unix epoch.
    Timestamp(i64),
    /// A UUID.
    Uuid([u8; 16]),
}

/// One decoded message.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Message {
    /// The headers, in order.
    pub headers: Vec<(String, HeaderValue)>,
    /// The payload.
    pub payload: Vec<u8>,
}

impl Message {
    /// The string value of header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find_map(|(n, v)| match v {
            HeaderValue::String(s) if n == name => Some(s.as_str()),
            _ => None,
        })
    }

    /// The message as an SSE frame: the event name is `:event-type` for an
    /// event, `:exception-type` for an exception, `:error-code` for an
    /// error; the data is the payload (an error's `:error-message` when its
    /// payload is empty).
    pub fn into_frame(self) -> Result<Frame, EventStreamError> {
        let event = match self.header(":message-type") {
            Some("exception") => self.header(":exception-type"),
            Some("error") => self.header(":error-code"),
            _ => self.header(":event-type"),
        }
        .map(str::to_owned);
        let data = if self.payload.is_empty() {
            self.header(":error-message").unwrap_or("").to_owned()
        } else {
            String::from_utf8(self.payload).map_err(|_| EventStreamError::InvalidUtf8)?
        };
        Ok(Frame { event, data })
    }

    /// The message's wire bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut headers = Vec::new();
        for (name, value) in &self.headers {
            headers.push(name.len() as u8);
            headers.extend_from_slice(name.as_bytes());
            match value {
                HeaderValue::Bool(true) => headers.push(0),
                HeaderValue::Bool(false) => headers.push(1),
                HeaderValue::Byte(v) => {
                    headers.push(2);
                    headers.extend_from_slice(&v.to_be_bytes());
                }
                HeaderValue::Short(v) => {
                    headers.push(3);
                    headers.extend_from_slice(&v.to_be_bytes());
                }
                HeaderValue::Int(v) => {
                    headers.push(4);
                    headers.extend_from_slice(&v.to_be_bytes());
                }
                HeaderValue::Long(v) => {
                    headers.push(5);
                    headers.extend_from_slice(&v.to_be_bytes());
                }
                HeaderValue::Bytes(v) => {
                    headers.push(6);
                    headers.extend_from_slice(&(v.len() as u16).to_be_bytes());
                    headers.extend_from_slice(v);
                }
                HeaderValue::String(v) => {
                    headers.push(7);
                    headers.extend_from_slice(&(v.len() as u16).to_be_bytes());
                    headers.extend_from_slice(v.as_bytes());
                }
                HeaderValue::Timestamp(v) => {
                    headers.push(8);
                    headers.extend_from_slice(&v.to_be_bytes());
                }
                HeaderValue::Uuid(v) => {
                    headers.push(9);
                    headers.extend_from_slice(v);
                }
            }
        }
        let total = OVERHEAD + headers.len() + self.payload.len();
        let mut out = Vec::with_capacity(total);
        out.extend_from_slice(&(total as u32).to_be_bytes());
        out.extend_from_slice(&(headers.len() as u32).to_be_bytes());
        let prelude_crc = crc32(&out);
        out.extend_from_slice(&prelude_crc.to_be_bytes());
        out.extend_from_slice(&headers);
        out.extend_from_slice(&self.payload);
        let message_crc = crc32(&out);
        out.extend_from_slice(&message_crc.to_be_bytes());
        out
    }

    /// An event message as Bedrock sends one: `:message-type: event`,
    /// `:event-type`, `:content-type: application/json`.
    pub fn event(event_type: &str, payload: impl Into<Vec<u8>>) -> Message {
        Message {
            headers: vec![
                (":event-type".into(), HeaderValue::String(event_type.into())),
                (
                    ":content-type".into(),
                    HeaderValue::String("application/json".into()),
                ),
                (":message-type".into(), HeaderValue::String("event".into())),
            ],
            payload: payload.into(),
        }
    }

    /// An exception message: `:message-type: exception`, `:exception-type`.
    pub fn exception(exception_type: &str, payload: impl Into<Vec<u8>>) -> Message {
        Message {
            headers: vec![
                (
                    ":exception-type".into(),
                    HeaderValue::String(exception_type.into()),
                ),
                (
                    ":content-type".into(),
                    HeaderValue::String("application/json".into()),
                ),
                (
                    ":message-type".into(),
                    HeaderValue::String("exception".into()),
                ),
            ],
            payload: payload.into(),
        }
    }
}

/// Incremental decoder: feed bytes as they arrive, take whole messages.
/// Buffers at most one message (bounded by its limit) plus the read being
/// decoded. After an error its state is unspecified: drop it.
#[derive(Debug)]
pub struct Decoder {
    buf: Vec<u8>,
    limit: usize,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new(DEFAULT_MESSAGE_LIMIT)
    }
}

impl Decoder {
    /// A decoder refusing messages larger than `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Decoder {
            buf: Vec::new(),
            limit,
        }
    }

    /// Append `bytes` and push every message they complete onto `out`.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<Message>) -> Result<(), EventStreamError> {
        self.buf.extend_from_slice(bytes);
        let mut start = 0;
        loop {
            let rest = &self.buf[start..];
            if rest.len() < 12 {
                break;
            }
            let total = be_u32(&rest[0..4]) as usize;
            let headers = be_u32(&rest[4..8]) as usize;
            if total > self.limit {
                return Err(EventStreamError::TooLarge {
                    length: total,
                    limit: self.limit,
                });
            }
            if total < OVERHEAD || headers > total - OVERHEAD {
                return Err(EventStreamError::BadPrelude { total, headers });
            }
            if crc32(&rest[0..8]) != be_u32(&rest[8..12]) {
                return Err(EventStreamError::PreludeCrc);
            }
            if rest.len() < total {
                break;
            }
            if crc32(&rest[..total - 4]) != be_u32(&rest[total - 4..total]) {
                return Err(EventStreamError::MessageCrc);
            }
            out.push(Message {
                headers: parse_headers(&rest[12..12 + headers])?,
                payload: rest[12 + headers..total - 4].to_vec(),
            });
            start += total;
        }
        self.buf.drain(..start);
        Ok(())
    }

    /// Whether bytes of an unfinished message are buffered.
    pub fn has_partial(&self) -> bool {
        !self.buf.is_empty()
    }
}

fn be_u32(bytes: &[u8]) -> u32 {
    u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

fn parse_headers(mut bytes: &[u8]) -> Result<Vec<(String, HeaderValue)>, EventStreamError> {
    fn take<'a>(bytes: &mut &'a [u8], n: usize) -> Result<&'a [u8], EventStreamError> {
        if bytes.len() < n {
            return Err(EventStreamError::BadHeader("truncated"));
        }
        let (head, tail) = bytes.split_at(n);
        *bytes = tail;
        Ok(head)
    }
    fn fixed<const N: usize>(bytes: &mut &[u8]) -> Result<[u8; N], EventStreamError> {
        let mut out = [0u8; N];
        out.copy_from_slice(take(bytes, N)?);
        Ok(out)
    }
    let mut headers = Vec::new();
    while !bytes.is_empty() {
        let name_len = take(&mut bytes, 1)?[0] as usize;
        let name = std::str::from_utf8(take(&mut bytes, name_len)?)
            .map_err(|_| EventStreamError::BadHeader("name is not UTF-8"))?
            .to_owned();
        let value = match take(&mut bytes, 1)?[0] {
            0 => HeaderValue::Bool(true),
            1 => HeaderValue::Bool(false),
            2 => HeaderValue::Byte(i8::from_be_bytes(fixed(&mut bytes)?)),
            3 => HeaderValue::Short(i16::from_be_bytes(fixed(&mut bytes)?)),
            4 => HeaderValue::Int(i32::from_be_bytes(fixed(&mut bytes)?)),
            5 => HeaderValue::Long(i64::from_be_bytes(fixed(&mut bytes)?)),
            kind @ (6 | 7) => {
                let len = u16::from_be_bytes(fixed(&mut bytes)?) as usize;
                let value = take(&mut bytes, len)?.to_vec();
                if kind == 6 {
                    HeaderValue::Bytes(value)
                } else {
                    HeaderValue::String(
                        String::from_utf8(value)
                            .map_err(|_| EventStreamError::BadHeader("string is not UTF-8"))?,
                    )
                }
            }
            8 => HeaderValue::Timestamp(i64::from_be_bytes(fixed(&mut bytes)?)),
            9 => HeaderValue::Uuid(fixed(&mut bytes)?),
            _ => return Err(EventStreamError::BadHeader("unknown value type")),
        };
        headers.push((name, value));
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The event-stream test messages AWS's implementations share: a
    /// payload without headers, and the same payload with one string
    /// header.
    const NO_HEADERS: &[u8] = &[
        0, 0, 0, 30, 0, 0, 0, 0, 186, 242, 246, 138, 123, 34, 102, 111, 111, 34, 58, 32, 34, 98,
        97, 114, 34, 125, 174, 114, 88, 228,
    ];
    const ONE_HEADER: &[u8] = &[
        0, 0, 0, 62, 0, 0, 0, 32, 64, 93, 249, 70, 12, 99, 111, 110, 116, 101, 110, 116, 45, 116,
        121, 112, 101, 7, 0, 16, 97, 112, 112, 108, 105, 99, 97, 116, 105, 111, 110, 47, 106, 115,
        111, 110, 123, 34, 102, 111, 111, 34, 58, 32, 34, 98, 97, 114, 34, 125, 111, 162, 191, 59,
    ];

    #[test]
    fn crc32_is_gzips() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn the_published_messages_decode_and_encode_back() {
        let mut decoder = Decoder::default();
        let mut out = Vec::new();
        decoder.feed(NO_HEADERS, &mut out).unwrap();
        decoder.feed(ONE_HEADER, &mut out).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].payload, br#"{"foo": "bar"}"#);
        assert!(out[0].headers.is_empty());
        assert_eq!(out[1].header("content-type"), Some("application/json"));
        assert_eq!(out[0].encode(), NO_HEADERS);
        assert_eq!(out[1].encode(), ONE_HEADER);
        assert!(!decoder.has_partial());
    }

    #[test]
    fn messages_split_anywhere_decode_alike() {
        let mut bytes = ONE_HEADER.to_vec();
        bytes.extend_from_slice(NO_HEADERS);
        for cut in 0..bytes.len() {
            let mut decoder = Decoder::default();
            let mut out = Vec::new();
            decoder.feed(&bytes[..cut], &mut out).unwrap();
            decoder.feed(&bytes[cut..], &mut out).unwrap();
            assert_eq!(out.len(), 2, "cut at {cut}");
        }
    }

    #[test]
    fn corrupted_or_oversized_messages_are_typed_errors() {
        let mut out = Vec::new();
        let mut prelude = NO_HEADERS.to_vec();
        prelude[9] ^= 1;
        assert_eq!(
            Decoder::default().feed(&prelude, &mut out),
            Err(EventStreamError::PreludeCrc)
        );
        let mut body = NO_HEADERS.to_vec();
        body[14] ^= 1;
        assert_eq!(
            Decoder::default().feed(&body, &mut out),
            Err(EventStreamError::MessageCrc)
        );
        assert!(matches!(
            Decoder::new(20).feed(NO_HEADERS, &mut out),
            Err(EventStreamError::TooLarge { length: 30, .. })
        ));
    }

    #[test]
    fn events_and_exceptions_read_as_frames() {
        let frame = Message::event("chunk", r#"{"bytes":"e30="}"#)
            .into_frame()
            .unwrap();
        assert_eq!(frame.event.as_deref(), Some("chunk"));
        assert_eq!(frame.data, r#"{"bytes":"e30="}"#);
        let frame = Message::exception("throttlingException", r#"{"message":"slow down"}"#)
            .into_frame()
            .unwrap();
        assert_eq!(frame.event.as_deref(), Some("throttlingException"));
    }
}
