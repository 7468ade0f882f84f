//! W3C Trace Context (`traceparent`, `tracestate`) and the request ids an
//! attempt carries to its supplier.
//!
//! A request joins the trace its client sent in a well-formed `traceparent`;
//! otherwise the router starts one. Each supplier attempt is a child span:
//! it goes out with the same trace id, a fresh span id and the client's
//! `tracestate` unchanged, so the supplier's spans hang under the router's.
//! See <https://www.w3.org/TR/trace-context/>.

/// The longest `tracestate` passed on (the spec allows dropping a value
/// that does not fit; 512 characters is its recommended minimum to keep).
const MAX_TRACESTATE: usize = 512;

/// One position in a trace: the trace, the span that is the parent of the
/// next one, and the flags (bit 0: sampled).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    flags: u8,
    /// The vendor entries of `tracestate`, passed on as received.
    state: Option<String>,
    /// The span is the client's (from its `traceparent`), not the router's.
    remote: bool,
}

impl TraceContext {
    /// The client's context from its `traceparent` and `tracestate`
    /// headers; `None` when `traceparent` is absent or malformed (then the
    /// client's `tracestate` is dropped too, as the spec requires).
    pub fn from_headers(traceparent: Option<&str>, tracestate: Option<&str>) -> Option<Self> {
        let (trace_id, span_id, flags) = parse_traceparent(traceparent?)?;
        let state = tracestate
            .map(str::trim)
            .filter(|s| !s.is_empty() && s.len() <= MAX_TRACESTATE && s.is_ascii())
            .map(str::to_owned);
        Some(TraceContext {
            trace_id,
            span_id,
            flags,
            state,
            remote: true,
        })
    }

    /// A new trace started by the router (sampled when `sampled`).
    pub fn start(sampled: bool) -> Self {
        TraceContext {
            trace_id: random_trace_id(),
            span_id: random_span_id(),
            flags: u8::from(sampled),
            state: None,
            remote: false,
        }
    }

    /// The client's context, or a new trace when it sent none.
    pub fn from_headers_or_start(
        traceparent: Option<&str>,
        tracestate: Option<&str>,
        sampled: bool,
    ) -> Self {
        Self::from_headers(traceparent, tracestate).unwrap_or_else(|| Self::start(sampled))
    }

    /// A child span of this one: same trace and flags, a new span id.
    pub fn child(&self) -> Self {
        TraceContext {
            span_id: random_span_id(),
            remote: false,
            ..self.clone()
        }
    }

    /// The trace id as 32 lowercase hex digits.
    pub fn trace_id(&self) -> String {
        hex(&self.trace_id)
    }

    /// The span id as 16 lowercase hex digits.
    pub fn span_id(&self) -> String {
        hex(&self.span_id)
    }

    pub fn trace_id_bytes(&self) -> [u8; 16] {
        self.trace_id
    }

    pub fn span_id_bytes(&self) -> [u8; 8] {
        self.span_id
    }

    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }

    /// Whether this span is the client's (its `traceparent`'s parent).
    pub fn is_remote(&self) -> bool {
        self.remote
    }

    /// The `traceparent` header naming this span as the parent (version 00).
    pub fn traceparent(&self) -> String {
        let mut text = String::with_capacity(55);
        text.push_str("00-");
        push_hex(&mut text, &self.trace_id);
        text.push('-');
        push_hex(&mut text, &self.span_id);
        text.push('-');
        push_hex(&mut text, &[self.flags]);
        text
    }

    /// The `tracestate` to pass on, if the client sent one.
    pub fn tracestate(&self) -> Option<&str> {
        self.state.as_deref()
    }
}

/// `version-traceid-parentid-flags`: version 00 exactly four fields; a
/// higher version (not `ff`) may add fields after a dash, which are
/// ignored. All-zero ids are invalid.
fn parse_traceparent(text: &str) -> Option<([u8; 16], [u8; 8], u8)> {
    let text = text.trim();
    if !text.is_ascii() {
        return None;
    }
    let version = text.get(..2)?;
    let version = u8::from_str_radix(version, 16).ok()?;
    if version == 0xff || !is_lower_hex(&text[..2]) {
        return None;
    }
    let rest = text.get(2..)?;
    let fields = rest.get(..53)?; // -{32}-{16}-{2}
    let tail = &rest[53..];
    if (version == 0 && !tail.is_empty())
        || (version > 0 && !tail.is_empty() && !tail.starts_with('-'))
    {
        return None;
    }
    let bytes = fields.as_bytes();
    if bytes[0] != b'-' || bytes[33] != b'-' || bytes[50] != b'-' {
        return None;
    }
    let trace_id: [u8; 16] = unhex(&fields[1..33])?;
    let span_id: [u8; 8] = unhex(&fields[34..50])?;
    let [flags]: [u8; 1] = unhex(&fields[51..53])?;
    if trace_id == [0; 16] || span_id == [0; 8] {
        return None;
    }
    Some((trace_id, span_id, flags))
}

fn is_lower_hex(text: &str) -> bool {
    text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn unhex<const N: usize>(text: &str) -> Option<[u8; N]> {
    if text.len() != 2 * N || !is_lower_hex(text) {
        return None;
    }
    let mut out = [0u8; N];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// Lower-case hex, two digits a byte. By table rather than `write!`: the ids
/// are rendered several times a request (log line, span, supplier headers,
/// the attempt's row), and the formatter cost 10,000 instructions of it.
fn hex(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len() * 2);
    push_hex(&mut text, bytes);
    text
}

fn push_hex(text: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        text.push(char::from(DIGITS[usize::from(b >> 4)]));
        text.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
}

fn random_trace_id() -> [u8; 16] {
    loop {
        let id = (u128::from(random_u64()) << 64 | u128::from(random_u64())).to_be_bytes();
        if id != [0; 16] {
            return id;
        }
    }
}

fn random_span_id() -> [u8; 8] {
    loop {
        let id = random_u64().to_be_bytes();
        if id != [0; 8] {
            return id;
        }
    }
}

/// Random 64-bit values for trace and span ids: SplitMix64 per thread,
/// seeded once from the operating system (a v4 UUID's random bits), so a
/// request's ids cost no system call. Ids must be unique and unguessable
/// enough to keep traces apart (W3C Trace Context), not secret.
fn random_u64() -> u64 {
    use std::cell::Cell;
    thread_local! {
        static STATE: Cell<u64> = Cell::new(uuid::Uuid::new_v4().as_u64_pair().0);
    }
    STATE.with(|state| {
        let next = state.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
        state.set(next);
        let mut z = next;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    })
}

/// Whether a client's `x-request-id` is kept: 1 to 128 characters of
/// letters, digits and `-_.:+=/`. Anything else (empty, longer, spaces,
/// control or non-ASCII characters) is replaced by the router's id.
pub fn is_well_formed_request_id(text: &str) -> bool {
    (1..=128).contains(&text.len())
        && text.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':' | b'+' | b'=' | b'/')
        })
}

/// A supplier's own request id from its reply headers (`x-request-id` for
/// OpenAI dialects, `request-id` for Anthropic's), when it is a short
/// printable token; kept on the attempt's record for support.
pub fn supplier_request_id<'a>(header: impl Fn(&str) -> Option<&'a str>) -> Option<String> {
    ["x-request-id", "request-id"]
        .into_iter()
        .filter_map(header)
        .map(str::trim)
        .find(|v| (1..=200).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_traceparent_is_joined_and_its_child_keeps_the_trace() {
        let context = TraceContext::from_headers(Some(VALID), Some("congo=t61rcWkgMzE")).unwrap();
        assert_eq!(context.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(context.span_id(), "00f067aa0ba902b7");
        assert!(context.sampled());
        assert_eq!(context.traceparent(), VALID);
        let child = context.child();
        assert_eq!(child.trace_id(), context.trace_id());
        assert_ne!(child.span_id(), context.span_id());
        assert_eq!(child.tracestate(), Some("congo=t61rcWkgMzE"));
        assert!(child.traceparent().ends_with("-01"));
    }

    #[test]
    fn malformed_traceparents_are_refused() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert!(
                TraceContext::from_headers(Some(bad), None).is_none(),
                "{bad}"
            );
        }
        // A later version may add fields; the first four are read.
        let future = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-what-ever";
        let context = TraceContext::from_headers(Some(future), None).unwrap();
        assert!(!context.sampled());
        assert!(context.traceparent().starts_with("00-4bf92f35"));
    }

    #[test]
    fn a_new_trace_has_nonzero_random_ids() {
        let a = TraceContext::start(false);
        let b = TraceContext::start(true);
        assert_ne!(a.trace_id(), b.trace_id());
        assert_eq!(a.traceparent().len(), 55);
        assert!(TraceContext::from_headers(Some(&a.traceparent()), None).is_some());
        assert!(b.sampled() && !a.sampled());
    }

    #[test]
    fn request_ids_are_kept_only_when_well_formed() {
        for good in ["abc", "0f3c-11ee:be56+x=/y.z_", &"a".repeat(128)] {
            assert!(is_well_formed_request_id(good), "{good}");
        }
        for bad in [
            "",
            "has space",
            "tab\t",
            "é",
            &"a".repeat(129),
            "a\"b",
            "a\nb",
        ] {
            assert!(!is_well_formed_request_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn the_supplier_request_id_is_read_from_either_header() {
        let openai = |name: &str| (name == "x-request-id").then_some("req_abc123");
        assert_eq!(supplier_request_id(openai).as_deref(), Some("req_abc123"));
        let anthropic = |name: &str| (name == "request-id").then_some("req_011CX");
        assert_eq!(supplier_request_id(anthropic).as_deref(), Some("req_011CX"));
        let junk = |_: &str| Some("has space");
        assert_eq!(supplier_request_id(junk), None);
    }
}
