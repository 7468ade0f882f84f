//! A streaming `multipart/form-data` reader (RFC 7578 over RFC 2046) for
//! an upload's body.
//!
//! A part's data is handed on as slices of the chunks the connection
//! delivered, never copied: only part headers, and the few bytes that may
//! begin a delimiter at the end of a chunk, are. General-purpose parsers
//! (`multer`) copy the whole body into a buffer of their own first, which
//! costs an upload a copy of every byte and a buffer per connection; at
//! 50 concurrent 8 MiB uploads that copy was the difference between the
//! upload bench's target met and missed (docs/performance.md, Uploads).

use bytes::{Buf as _, Bytes, BytesMut};
use futures::{Stream, StreamExt as _};
use memchr::memmem;

/// Bytes of one part's header block at most.
const MAX_HEADER_BYTES: usize = 16 * 1024;
/// Header lines of one part at most.
const MAX_HEADERS: usize = 32;
/// RFC 2046: a boundary is 1 to 70 characters.
const MAX_BOUNDARY: usize = 70;

/// Why a body could not be read as form data.
#[derive(Debug, PartialEq, Eq)]
pub enum FormError {
    /// Not well-formed multipart, or cut short (the stream failed or ended
    /// before the close delimiter).
    Malformed,
    /// The body is longer than the limit.
    TooLarge,
    /// The body did not arrive in time (its stream said so, [`ReadFailure`]).
    TimedOut,
}

/// What a body stream's failure means to a form: a client too slow to send
/// its body is not one that sent a malformed one. The body's reader (the
/// HTTP edge) implements it for its error type.
pub trait ReadFailure {
    fn timed_out(&self) -> bool;
}

impl ReadFailure for () {
    fn timed_out(&self) -> bool {
        false
    }
}

/// The headers of a part that matter to a form.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct PartHead {
    /// `Content-Disposition`'s `name`.
    pub name: Option<String>,
    /// `Content-Disposition`'s `filename` (or a decoded `filename*`).
    pub filename: Option<String>,
    /// The `Content-Type` without parameters, lower-case.
    pub content_type: Option<String>,
}

/// The boundary of a `multipart/form-data` content type; `None` for any
/// other type or a missing or invalid boundary.
pub fn boundary(content_type: &str) -> Option<String> {
    let (essence, params) = split_value(content_type);
    if !essence.eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    let boundary = param(params, "boundary")?;
    (1..=MAX_BOUNDARY)
        .contains(&boundary.len())
        .then_some(boundary)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Before the first delimiter: the preamble is skipped.
    Preamble,
    /// Just past a delimiter: a boundary line and headers follow, or `--`.
    AtBoundary,
    /// Inside a part's data.
    InPart,
    /// Past the close delimiter.
    Finished,
}

/// Reads the parts of one body in order.
pub struct FormData<S> {
    stream: S,
    /// `CRLF "--" boundary`.
    delimiter: Box<[u8]>,
    finder: memmem::Finder<'static>,
    /// Received and not yet consumed.
    pending: Bytes,
    state: State,
    received: u64,
    limit: u64,
}

impl<S, E> FormData<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: ReadFailure,
{
    /// A reader of `stream`, a body of at most `limit` bytes.
    pub fn new(stream: S, boundary: &str, limit: u64) -> Self {
        let delimiter: Box<[u8]> = [b"\r\n--", boundary.as_bytes()].concat().into();
        let finder = memmem::Finder::new(&delimiter[..]).into_owned();
        FormData {
            stream,
            delimiter,
            finder,
            // The first delimiter may open the body, without the CRLF that
            // precedes every other one: reading the body as if it followed
            // one finds it either way (the preamble before it is skipped).
            pending: Bytes::from_static(b"\r\n"),
            state: State::Preamble,
            received: 0,
            limit,
        }
    }

    /// The next part's headers, skipping what is left of the current one;
    /// `None` after the close delimiter.
    pub async fn next_part(&mut self) -> Result<Option<PartHead>, FormError> {
        while matches!(self.state, State::Preamble | State::InPart) {
            self.next_chunk().await?;
        }
        if self.state == State::Finished {
            return Ok(None);
        }
        // The rest of the boundary line: `--` closes the body; otherwise
        // only transport padding (blanks) may precede its CRLF.
        while self.pending.len() < 2 {
            let next = self.fetch().await?;
            self.append(next);
        }
        if self.pending.starts_with(b"--") {
            self.state = State::Finished;
            return Ok(None);
        }
        let mut budget = MAX_HEADER_BYTES;
        let line = self.read_line(&mut budget).await?;
        if !line.iter().all(|b| matches!(b, b' ' | b'\t')) {
            return Err(FormError::Malformed);
        }
        let mut head = PartHead::default();
        for _ in 0..=MAX_HEADERS {
            let line = self.read_line(&mut budget).await?;
            if line.is_empty() {
                self.state = State::InPart;
                return Ok(Some(head));
            }
            let line = std::str::from_utf8(&line).map_err(|_| FormError::Malformed)?;
            let (name, value) = line.split_once(':').ok_or(FormError::Malformed)?;
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-disposition") {
                let (kind, params) = split_value(value);
                if !kind.eq_ignore_ascii_case("form-data") {
                    return Err(FormError::Malformed);
                }
                head.name = param(params, "name");
                head.filename = param(params, "filename")
                    .or_else(|| param(params, "filename*").map(|v| extended_value(&v)));
            } else if name.eq_ignore_ascii_case("content-type") {
                head.content_type = Some(split_value(value).0.to_ascii_lowercase());
            }
        }
        Err(FormError::Malformed)
    }

    /// The next slice of the current part's data; `None` at its end.
    pub async fn next_chunk(&mut self) -> Result<Option<Bytes>, FormError> {
        if !matches!(self.state, State::Preamble | State::InPart) {
            return Ok(None);
        }
        let d = self.delimiter.len();
        loop {
            if self.pending.is_empty() {
                self.pending = self.fetch().await?;
            }
            if let Some(at) = self.finder.find(&self.pending) {
                let data = self.pending.split_to(at);
                self.pending.advance(d);
                return Ok(self.end_part(data));
            }
            // No whole delimiter here; the last bytes may begin one.
            let held = self.possible_delimiter_start();
            if held < self.pending.len() {
                let data = self.pending.split_to(self.pending.len() - held);
                return Ok(self.data(data));
            }
            // All of `pending` (shorter than a delimiter) may begin one.
            let next = self.fetch().await?;
            if next.len() < d {
                // Small pieces: join them (fewer than 2 delimiters' bytes).
                self.append(next);
                continue;
            }
            // A delimiter starting in `pending` ends within `d` bytes of
            // `next`: look in a small probe, then go on in `next` itself.
            let held = std::mem::take(&mut self.pending);
            let probe = [&held[..], &next[..d]].concat();
            if let Some(at) = self.finder.find(&probe) {
                let data = held.slice(..at);
                self.pending = next.slice(at + d - held.len()..);
                return Ok(self.end_part(data));
            }
            self.pending = next;
            if let Some(data) = self.data(held) {
                return Ok(Some(data));
            }
        }
    }

    /// Data of the current part, or nothing (preamble).
    fn data(&self, data: Bytes) -> Option<Bytes> {
        (self.state == State::InPart && !data.is_empty()).then_some(data)
    }

    /// A delimiter ends the current part (or the preamble): its last data.
    fn end_part(&mut self, data: Bytes) -> Option<Bytes> {
        let last = self.data(data);
        self.state = State::AtBoundary;
        last
    }

    /// The length of the longest end of `pending` that is a proper
    /// beginning of the delimiter.
    fn possible_delimiter_start(&self) -> usize {
        let longest = (self.delimiter.len() - 1).min(self.pending.len());
        let from = self.pending.len() - longest;
        memchr::memchr_iter(b'\r', &self.pending[from..])
            .map(|at| from + at)
            .find(|&at| self.delimiter.starts_with(&self.pending[at..]))
            .map_or(0, |at| self.pending.len() - at)
    }

    /// One line (without its CRLF) of the header block, copied.
    async fn read_line(&mut self, budget: &mut usize) -> Result<Vec<u8>, FormError> {
        let mut line = Vec::new();
        loop {
            if self.pending.is_empty() {
                self.pending = self.fetch().await?;
            }
            let end = memchr::memchr(b'\n', &self.pending);
            let take = end.map_or(self.pending.len(), |at| at + 1);
            if take > *budget {
                return Err(FormError::Malformed);
            }
            *budget -= take;
            line.extend_from_slice(&self.pending[..take]);
            self.pending.advance(take);
            if end.is_some() {
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(line);
            }
        }
    }

    /// The next non-empty chunk of the body, counted against the limit.
    async fn fetch(&mut self) -> Result<Bytes, FormError> {
        loop {
            let chunk = match self.stream.next().await {
                Some(Ok(chunk)) => chunk,
                Some(Err(e)) if e.timed_out() => return Err(FormError::TimedOut),
                Some(Err(_)) | None => return Err(FormError::Malformed),
            };
            self.received += chunk.len() as u64;
            if self.received > self.limit {
                return Err(FormError::TooLarge);
            }
            if !chunk.is_empty() {
                return Ok(chunk);
            }
        }
    }

    /// Appends `next` to `pending`, which is only ever a few bytes long
    /// when more are needed to decide.
    fn append(&mut self, next: Bytes) {
        if self.pending.is_empty() {
            self.pending = next;
            return;
        }
        let mut joined = BytesMut::with_capacity(self.pending.len() + next.len());
        joined.extend_from_slice(&self.pending);
        joined.extend_from_slice(&next);
        self.pending = joined.freeze();
    }
}

/// A header value's first item (before `;`), trimmed, and its parameters.
fn split_value(value: &str) -> (&str, &str) {
    let (first, params) = value.split_once(';').unwrap_or((value, ""));
    (first.trim(), params)
}

/// The value of parameter `wanted` (name case-insensitive) in
/// `; a=b; c="d"` form: a token, or a quoted string with `\` escapes.
fn param(mut params: &str, wanted: &str) -> Option<String> {
    loop {
        params = params.trim_start_matches(|c: char| c == ';' || c.is_ascii_whitespace());
        if params.is_empty() {
            return None;
        }
        let eq = params.find('=')?;
        if let Some(semicolon) = params[..eq].find(';') {
            // A parameter without a value: skip it.
            params = &params[semicolon..];
            continue;
        }
        let (name, rest) = (&params[..eq], params[eq + 1..].trim_start());
        let (value, rest) = if let Some(quoted) = rest.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = None;
            while let Some((at, c)) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next().map(|(_, c)| c)),
                    '"' => {
                        end = Some(at + 1);
                        break;
                    }
                    c => value.push(c),
                }
            }
            (value, &quoted[end?..])
        } else {
            let end = rest.find(';').unwrap_or(rest.len());
            (rest[..end].trim().to_owned(), &rest[end..])
        };
        if name.trim().eq_ignore_ascii_case(wanted) {
            return Some(value);
        }
        params = rest;
    }
}

/// An RFC 8187 extended value (`UTF-8''na%C3%AFve.png`), decoded; anything
/// else is kept as it came.
fn extended_value(value: &str) -> String {
    let mut pieces = value.splitn(3, '\'');
    let (Some(charset), Some(_language), Some(encoded)) =
        (pieces.next(), pieces.next(), pieces.next())
    else {
        return value.to_owned();
    };
    if !charset.eq_ignore_ascii_case("utf-8") {
        return value.to_owned();
    }
    let mut bytes = Vec::with_capacity(encoded.len());
    let mut rest = encoded.as_bytes();
    let hex = |b: &u8| {
        char::from(*b)
            .to_digit(16)
            .and_then(|d| u8::try_from(d).ok())
    };
    while let Some((&b, tail)) = rest.split_first() {
        let escaped = match tail {
            [hi, lo, after @ ..] if b == b'%' => {
                hex(hi).zip(hex(lo)).map(|(hi, lo)| (hi * 16 + lo, after))
            }
            _ => None,
        };
        let (byte, after) = escaped.unwrap_or((b, tail));
        bytes.push(byte);
        rest = after;
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: &str = "b0undary";

    fn body(parts: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = b"preamble to skip\r\n".to_vec();
        for (head, data) in parts {
            out.extend_from_slice(format!("--{B}\r\n{head}\r\n\r\n").as_bytes());
            out.extend_from_slice(data);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(format!("--{B}--\r\nepilogue").as_bytes());
        out
    }

    /// Reads every part of `body` cut into pieces of `piece` bytes: each
    /// part's head and its data joined.
    fn read_all(body: &[u8], piece: usize) -> Result<Vec<(PartHead, Vec<u8>)>, FormError> {
        let chunks: Vec<Result<Bytes, ()>> = body
            .chunks(piece)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        let mut form = FormData::new(futures::stream::iter(chunks), B, 1 << 20);
        futures::executor::block_on(async {
            let mut parts = Vec::new();
            while let Some(head) = form.next_part().await? {
                let mut data = Vec::new();
                while let Some(chunk) = form.next_chunk().await? {
                    assert!(!chunk.is_empty());
                    data.extend_from_slice(&chunk);
                }
                parts.push((head, data));
            }
            Ok(parts)
        })
    }

    #[test]
    fn parts_come_out_whole_however_the_body_is_cut() {
        // Data full of near-delimiters: CRs, CRLFs, `--`, the boundary
        // without its CRLF, and a delimiter missing its last byte.
        let tricky = format!("\r\r\n-\r\n--\r\n--b0undar x --{B} \r\n--b0undar");
        let parts: [(&str, &[u8]); 3] = [
            (
                "Content-Disposition: form-data; name=\"file\"; filename=\"a b.png\"\r\nContent-Type: Image/PNG; charset=x",
                tricky.as_bytes(),
            ),
            ("content-disposition: form-data; name=empty", b""),
            (
                "Content-Disposition: form-data; name=\"tail\"",
                b"ends in CR\r",
            ),
        ];
        let body = body(&parts);
        for piece in [1, 2, 3, 5, 7, 11, 12, 13, 64, body.len()] {
            let read = read_all(&body, piece).unwrap();
            assert_eq!(read.len(), 3, "piece {piece}");
            assert_eq!(read[0].0.name.as_deref(), Some("file"));
            assert_eq!(read[0].0.filename.as_deref(), Some("a b.png"));
            assert_eq!(read[0].0.content_type.as_deref(), Some("image/png"));
            assert_eq!(read[0].1, tricky.as_bytes(), "piece {piece}");
            assert_eq!(read[1].0.name.as_deref(), Some("empty"));
            assert_eq!(read[1].1, b"");
            assert_eq!(read[2].1, b"ends in CR\r", "piece {piece}");
        }
    }

    #[test]
    fn random_near_delimiters_in_random_pieces() {
        // A fixed xorshift sequence: data from the delimiter's own bytes
        // (so near-delimiters are everywhere), cut at random places.
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |below: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            usize::try_from(seed % below as u64).unwrap_or(0)
        };
        let alphabet = format!("\r\n-{B}");
        let delimiter = format!("\r\n--{B}");
        for _ in 0..300 {
            let parts: Vec<Vec<u8>> = (0..1 + next(3))
                .map(|_| {
                    loop {
                        let data: Vec<u8> = (0..next(80))
                            .map(|_| alphabet.as_bytes()[next(alphabet.len())])
                            .collect();
                        if memmem::find(&data, delimiter.as_bytes()).is_none() {
                            break data;
                        }
                    }
                })
                .collect();
            let heads: Vec<(&str, &[u8])> = parts
                .iter()
                .map(|d| ("Content-Disposition: form-data; name=\"p\"", d.as_slice()))
                .collect();
            let body = body(&heads);
            let piece = 1 + next(40);
            let read = read_all(&body, piece).unwrap();
            let data: Vec<&[u8]> = read.iter().map(|(_, d)| d.as_slice()).collect();
            let want: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
            assert_eq!(data, want, "pieces of {piece}");
        }
    }

    #[test]
    fn a_body_may_open_with_its_delimiter_and_pad_boundary_lines() {
        let body =
            format!("--{B} \t\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\nv\r\n--{B}--");
        let read = read_all(body.as_bytes(), 4).unwrap();
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].1, b"v");
    }

    #[test]
    fn cut_short_or_misshapen_bodies_are_malformed() {
        let good = body(&[("Content-Disposition: form-data; name=\"f\"", b"data")]);
        for cut in [0, 10, good.len() - 20, good.len() - 12] {
            assert_eq!(read_all(&good[..cut], 3).unwrap_err(), FormError::Malformed);
        }
        // Another boundary: no delimiter is ever found.
        let other = String::from_utf8(good.clone()).unwrap().replace(B, "other");
        assert_eq!(
            read_all(other.as_bytes(), 8).unwrap_err(),
            FormError::Malformed
        );
        // Text after the boundary on its line, and a header without a colon.
        let text_after = format!("--{B}x\r\n\r\nv\r\n--{B}--");
        assert_eq!(
            read_all(text_after.as_bytes(), 8).unwrap_err(),
            FormError::Malformed
        );
        let no_colon = format!("--{B}\r\nnonsense\r\n\r\nv\r\n--{B}--");
        assert_eq!(
            read_all(no_colon.as_bytes(), 8).unwrap_err(),
            FormError::Malformed
        );
    }

    #[test]
    fn the_limit_counts_every_byte_received() {
        let body = body(&[("Content-Disposition: form-data; name=\"f\"", &[b'z'; 500])]);
        let run = |limit: u64| {
            let chunks: Vec<Result<Bytes, ()>> = body
                .chunks(100)
                .map(|c| Ok(Bytes::copy_from_slice(c)))
                .collect();
            let mut form = FormData::new(futures::stream::iter(chunks), B, limit);
            futures::executor::block_on(async {
                while form.next_part().await?.is_some() {
                    while form.next_chunk().await?.is_some() {}
                }
                Ok::<_, FormError>(())
            })
        };
        assert_eq!(run(body.len() as u64), Ok(()));
        assert_eq!(run(body.len() as u64 - 1), Err(FormError::TooLarge));
    }

    #[test]
    fn boundaries_and_parameters() {
        assert_eq!(
            boundary("multipart/form-data; boundary=abc").as_deref(),
            Some("abc")
        );
        assert_eq!(
            boundary("Multipart/Form-Data ; charset=x; BOUNDARY=\"a b;c\"").as_deref(),
            Some("a b;c")
        );
        assert_eq!(boundary("multipart/mixed; boundary=abc"), None);
        assert_eq!(boundary("multipart/form-data"), None);
        assert_eq!(boundary("multipart/form-data; boundary="), None);
        assert_eq!(
            boundary(&format!("multipart/form-data; boundary={}", "x".repeat(71))),
            None
        );
        assert_eq!(
            param("; name=\"a \\\"q\\\" b\"; filename=x.png", "name").as_deref(),
            Some("a \"q\" b")
        );
        assert_eq!(param("; filename*=UTF-8''x", "filename"), None);
        assert_eq!(param("; flag; name=x", "name").as_deref(), Some("x"));
        assert_eq!(extended_value("UTF-8''na%C3%AFve%20.png"), "naïve .png");
        assert_eq!(extended_value("no quotes"), "no quotes");
    }
}
