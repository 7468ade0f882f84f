//! Router signatures for thinking that no Anthropic supplier signed.
//!
//! A Messages client must send every thinking block back with the
//! `signature` it was returned with. When its answer came from a Chat or
//! Responses route there is no Anthropic signature, so the router issues its
//! own: a **seal**,
//!
//! ```text
//! rtr1.<base64url(payload)>.<base64url(HMAC-SHA256 tag)>
//! payload = dialect byte (1 = chat, 2 = responses) ++ replay data (UTF-8)
//! tag     = HMAC(key, "rtr1" ++ u64be(payload length) ++ payload ++ thinking text)
//! ```
//!
//! The replay data is what the dialect needs to continue the reasoning (the
//! Responses `encrypted_content`; empty when the supplier sent none, and
//! always for Chat). The tag also covers the thinking text, so a block whose
//! text was edited no longer verifies, as with Anthropic's own signatures.
//! The key is generated once and kept in PostgreSQL, so every router
//! instance issues and accepts the same seals ([`SealKey::load`]).
//!
//! When a Messages request carries thinking back, [`SealKey::open`] checks
//! every seal before routing (a bad one is a 400 naming the block), and each
//! attempt gets the history its route can take ([`SealedHistory::for_route`]):
//! the route's dialect is the sealed one -> the original replay data is
//! restored as the signature; any other route (a native Messages route
//! included) -> the block is dropped, and the model reasons afresh.
//! Signatures without the `rtr1.` prefix (Anthropic's) are never touched.

use crate::store::{Store, StoreError};
use crate::supplier::EventStream;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures::StreamExt;
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};
use router_canonical::{
    ApiError, BlockDelta, BlockKind, ContentPart, OutputBlock, Protocol, Request, Response,
    StreamEvent,
};
use std::collections::{BTreeMap, VecDeque};

/// Every router seal starts with this; Anthropic signatures never do.
pub const SEAL_PREFIX: &str = "rtr1.";
/// The version the key is stored under (`thinking_seal_keys.version`).
pub const SEAL_VERSION: i16 = 1;
/// Length of a seal key, in bytes.
pub const SEAL_KEY_LEN: usize = 32;
/// What any router version's seal starts with (`rtr` + digits + `.`).
const ROUTER_PREFIX: &str = "rtr";

/// The dialect a sealed thinking block came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SealedDialect {
    Chat,
    Responses,
}

impl SealedDialect {
    /// The dialect a route of `protocol` gives a Messages client, or `None`
    /// for a Messages route, whose signatures are Anthropic's own.
    pub fn of_route(protocol: Protocol) -> Option<SealedDialect> {
        match protocol {
            // Gemini's thought summaries travel without replay data, as
            // Chat's reasoning does: sealed like Chat's, dropped elsewhere.
            // So do Converse's (its models are not all Claude).
            Protocol::Chat
            | Protocol::Completions
            | Protocol::Gemini
            | Protocol::BedrockConverse => Some(SealedDialect::Chat),
            Protocol::Responses => Some(SealedDialect::Responses),
            // Claude on Bedrock signs its thinking as Anthropic does.
            // Media routes never carry thinking.
            Protocol::Messages
            | Protocol::BedrockMessages
            | Protocol::Images
            | Protocol::Videos => None,
            // A protocol added later carries no thinking until it says so.
            _ => None,
        }
    }

    fn protocol(self) -> Protocol {
        match self {
            SealedDialect::Chat => Protocol::Chat,
            SealedDialect::Responses => Protocol::Responses,
        }
    }

    fn byte(self) -> u8 {
        match self {
            SealedDialect::Chat => 1,
            SealedDialect::Responses => 2,
        }
    }

    fn from_byte(byte: u8) -> Option<SealedDialect> {
        match byte {
            1 => Some(SealedDialect::Chat),
            2 => Some(SealedDialect::Responses),
            _ => None,
        }
    }
}

/// Why a router signature was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SealRejection {
    #[error("the router signature has a version this router does not issue")]
    UnknownVersion,
    #[error("the router signature is malformed")]
    Malformed,
    #[error("the router signature does not match this thinking block")]
    BadTag,
}

/// A thinking block in the request whose router signature was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("messages[{message}].content[{part}].signature: {reason}")]
pub struct SealError {
    /// Index into the canonical `Request::messages`.
    pub message: usize,
    /// Index into that message's `content`.
    pub part: usize,
    /// How many canonical messages the request has (to map `message` back
    /// to a wire index).
    pub total_messages: usize,
    pub reason: SealRejection,
}

impl SealError {
    /// The public 400, with `param` naming the block as `path` gives it
    /// (e.g. `messages[2].content[0].signature`).
    /// The path is in the message too: the Messages envelope has no `param`.
    pub fn to_api_error(&self, path: String) -> ApiError {
        let message = format!(
            "`{path}` is not a signature the router issued for this thinking block: send thinking blocks back unchanged, with the signature they were returned with."
        );
        ApiError::invalid(path, message)
    }

    /// The block's path in canonical indexes; a surface whose wire indexes
    /// differ (Messages puts `system` first) maps them itself.
    pub fn canonical_path(&self) -> String {
        format!(
            "messages[{}].content[{}].signature",
            self.message, self.part
        )
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SealKeyError {
    #[error("the system random generator failed")]
    Random,
    #[error("the stored thinking seal key is not {SEAL_KEY_LEN} bytes long")]
    BadStoredKey,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The secret that authenticates router seals. `Debug` never shows it.
#[derive(Clone)]
pub struct SealKey {
    bytes: [u8; SEAL_KEY_LEN],
    hmac: hmac::Key,
}

impl std::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealKey(redacted)")
    }
}

impl SealKey {
    pub fn from_bytes(bytes: [u8; SEAL_KEY_LEN]) -> SealKey {
        SealKey {
            bytes,
            hmac: hmac::Key::new(hmac::HMAC_SHA256, &bytes),
        }
    }

    /// A fresh random key.
    pub fn generate() -> Result<SealKey, SealKeyError> {
        let mut bytes = [0u8; SEAL_KEY_LEN];
        SystemRandom::new()
            .fill(&mut bytes)
            .map_err(|_| SealKeyError::Random)?;
        Ok(SealKey::from_bytes(bytes))
    }

    /// The raw secret, for the store only.
    pub fn as_bytes(&self) -> &[u8; SEAL_KEY_LEN] {
        &self.bytes
    }

    /// The deployment's key: the stored one, or a new random one stored
    /// first (several instances starting at once agree on one).
    pub async fn load(store: &impl Store) -> Result<SealKey, SealKeyError> {
        let candidate = SealKey::generate()?;
        let stored = store.thinking_seal_key(candidate.bytes.to_vec()).await?;
        let bytes: [u8; SEAL_KEY_LEN] = stored
            .as_slice()
            .try_into()
            .map_err(|_| SealKeyError::BadStoredKey)?;
        Ok(SealKey::from_bytes(bytes))
    }

    fn tag(&self, payload: &[u8], text: &str) -> hmac::Tag {
        hmac::sign(&self.hmac, &signed_bytes(payload, text))
    }

    /// The router signature of a thinking block of `dialect` with `text`,
    /// carrying `replay` (possibly empty).
    pub fn seal(&self, dialect: SealedDialect, replay: &str, text: &str) -> String {
        let mut payload = Vec::with_capacity(1 + replay.len());
        payload.push(dialect.byte());
        payload.extend_from_slice(replay.as_bytes());
        let tag = self.tag(&payload, text);
        format!(
            "{SEAL_PREFIX}{}.{}",
            URL_SAFE_NO_PAD.encode(&payload),
            URL_SAFE_NO_PAD.encode(tag.as_ref())
        )
    }

    /// Checks a router signature against the block's `text`. `Ok(None)`: not
    /// a router signature at all (an Anthropic one).
    pub fn verify(&self, signature: &str, text: &str) -> Result<Option<Sealed>, SealRejection> {
        let Some(rest) = signature.strip_prefix(SEAL_PREFIX) else {
            return if is_router_signature(signature) {
                Err(SealRejection::UnknownVersion)
            } else {
                Ok(None)
            };
        };
        let (payload, tag) = rest.split_once('.').ok_or(SealRejection::Malformed)?;
        let payload = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| SealRejection::Malformed)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| SealRejection::Malformed)?;
        // `verify` compares in constant time.
        hmac::verify(&self.hmac, &signed_bytes(&payload, text), &tag)
            .map_err(|_| SealRejection::BadTag)?;
        let (&dialect, replay) = payload.split_first().ok_or(SealRejection::Malformed)?;
        let dialect = SealedDialect::from_byte(dialect).ok_or(SealRejection::Malformed)?;
        let replay = String::from_utf8(replay.to_vec()).map_err(|_| SealRejection::Malformed)?;
        Ok(Some(Sealed { dialect, replay }))
    }

    /// Checks every router signature in a Messages request's history.
    pub fn open(&self, request: &Request) -> Result<SealedHistory, SealError> {
        let mut parts = Vec::new();
        for (message, m) in request.messages.iter().enumerate() {
            for (part, p) in m.content.iter().enumerate() {
                let ContentPart::Thinking {
                    text,
                    signature: Some(signature),
                } = p
                else {
                    continue;
                };
                match self.verify(signature, text) {
                    Ok(Some(sealed)) => parts.push(((message, part), sealed)),
                    Ok(None) => {}
                    Err(reason) => {
                        return Err(SealError {
                            message,
                            part,
                            total_messages: request.messages.len(),
                            reason,
                        });
                    }
                }
            }
        }
        Ok(SealedHistory { parts })
    }

    /// Replaces the signature of every thinking block of a complete reply
    /// from a `dialect` route with a router seal.
    pub fn seal_response(&self, dialect: SealedDialect, response: &mut Response) {
        for block in &mut response.output {
            if let OutputBlock::Thinking { text, signature } = block {
                let replay = signature.take().unwrap_or_default();
                *signature = Some(self.seal(dialect, &replay, text));
            }
        }
    }
}

/// The bytes the tag covers (see the module docs).
fn signed_bytes(payload: &[u8], text: &str) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(4 + 8 + payload.len() + text.len());
    bytes.extend_from_slice(b"rtr1");
    bytes.extend_from_slice(&(payload.len() as u64).to_be_bytes());
    bytes.extend_from_slice(payload);
    bytes.extend_from_slice(text.as_bytes());
    bytes
}

/// `rtr<digits>.`: a router signature of some version.
fn is_router_signature(signature: &str) -> bool {
    signature
        .strip_prefix(ROUTER_PREFIX)
        .and_then(|rest| rest.split_once('.'))
        .is_some_and(|(version, _)| {
            !version.is_empty() && version.bytes().all(|b| b.is_ascii_digit())
        })
}

/// What a verified seal carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sealed {
    pub dialect: SealedDialect,
    pub replay: String,
}

/// The verified router seals of one request, by (message, part) position.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SealedHistory {
    parts: Vec<((usize, usize), Sealed)>,
}

impl SealedHistory {
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// The history an attempt on a route of `protocol` sends. A sealed block
    /// of the route's own dialect with replay data gets that data back as its
    /// signature; any other sealed block is dropped (without replay data
    /// there is nothing the supplier could continue from: Chat never has
    /// any, and a Responses reasoning item needs its `encrypted_content`). On a
    /// Responses route the other (Anthropic-signed) thinking is dropped as
    /// well, as the Responses encoder would, so that what it replays is
    /// exactly the restored Responses reasoning. A message left empty by the
    /// drops is left out. With the history, the protocol whose suppliers
    /// signed its restored thinking when that is not the inbound protocol's
    /// (the attempt's `SupplierTarget::thinking_signed_by`).
    pub fn for_route(&self, request: &Request, protocol: Protocol) -> (Request, Option<Protocol>) {
        let route_dialect = SealedDialect::of_route(protocol);
        let mut out = request.clone();
        let sealed: BTreeMap<(usize, usize), &Sealed> =
            self.parts.iter().map(|(at, s)| (*at, s)).collect();
        let mut restored = false;
        let mut emptied = Vec::with_capacity(out.messages.len());
        for (i, message) in out.messages.iter_mut().enumerate() {
            let content = std::mem::take(&mut message.content);
            let had_parts = !content.is_empty();
            for (j, part) in content.into_iter().enumerate() {
                match (sealed.get(&(i, j)), part) {
                    (Some(seal), ContentPart::Thinking { text, .. }) => {
                        if Some(seal.dialect) == route_dialect && !seal.replay.is_empty() {
                            restored = true;
                            message.content.push(ContentPart::Thinking {
                                text,
                                signature: Some(seal.replay.clone()),
                            });
                        }
                    }
                    (None, ContentPart::Thinking { .. }) if protocol == Protocol::Responses => {}
                    (_, part) => message.content.push(part),
                }
            }
            emptied.push(had_parts && message.content.is_empty());
        }
        let mut emptied = emptied.into_iter();
        out.messages.retain(|_| !emptied.next().unwrap_or(false));
        let signed_by = route_dialect
            .filter(|_| restored)
            .map(|dialect| dialect.protocol());
        (out, signed_by)
    }
}

/// Seals the thinking blocks of a stream from a `dialect` route, for a
/// Messages client: the supplier's signature deltas (its replay data) are
/// held back, and one `Signature` delta carrying the seal is sent right
/// before the block stops (or before `Finish`, for a block never stopped),
/// so every thinking block gets exactly one signature.
#[derive(Debug)]
pub struct StreamSealer {
    key: SealKey,
    dialect: SealedDialect,
    /// Open thinking blocks: index -> (text so far, replay data so far).
    open: BTreeMap<usize, (String, String)>,
}

impl StreamSealer {
    pub fn new(key: SealKey, dialect: SealedDialect) -> StreamSealer {
        StreamSealer {
            key,
            dialect,
            open: BTreeMap::new(),
        }
    }

    /// Feeds one supplier event; what the client gets goes to `out`.
    pub fn push(&mut self, event: StreamEvent, out: &mut VecDeque<StreamEvent>) {
        match event {
            StreamEvent::BlockStart {
                index,
                block: BlockKind::Thinking,
            } => {
                self.open.insert(index, (String::new(), String::new()));
                out.push_back(StreamEvent::BlockStart {
                    index,
                    block: BlockKind::Thinking,
                });
            }
            StreamEvent::Delta {
                index,
                delta: BlockDelta::Thinking(text),
            } => {
                if let Some((so_far, _)) = self.open.get_mut(&index) {
                    so_far.push_str(&text);
                }
                out.push_back(StreamEvent::Delta {
                    index,
                    delta: BlockDelta::Thinking(text),
                });
            }
            StreamEvent::Delta {
                index,
                delta: BlockDelta::Signature(signature),
            } => match self.open.get_mut(&index) {
                Some((_, replay)) => replay.push_str(&signature),
                None => out.push_back(StreamEvent::Delta {
                    index,
                    delta: BlockDelta::Signature(signature),
                }),
            },
            StreamEvent::BlockStop { index } => {
                if let Some((text, replay)) = self.open.remove(&index) {
                    out.push_back(self.signature(index, &text, &replay));
                }
                out.push_back(StreamEvent::BlockStop { index });
            }
            finish @ StreamEvent::Finish { .. } => {
                for (index, (text, replay)) in std::mem::take(&mut self.open) {
                    out.push_back(self.signature(index, &text, &replay));
                    out.push_back(StreamEvent::BlockStop { index });
                }
                out.push_back(finish);
            }
            other => out.push_back(other),
        }
    }

    fn signature(&self, index: usize, text: &str, replay: &str) -> StreamEvent {
        StreamEvent::Delta {
            index,
            delta: BlockDelta::Signature(self.key.seal(self.dialect, replay, text)),
        }
    }
}

/// A supplier stream with its thinking blocks sealed by `sealer`.
pub fn seal_stream(events: EventStream, sealer: StreamSealer) -> EventStream {
    Box::pin(futures::stream::unfold(
        (events, sealer, VecDeque::new(), false),
        |(mut events, mut sealer, mut queue, mut ended)| async move {
            loop {
                if let Some(event) = queue.pop_front() {
                    return Some((Ok(event), (events, sealer, queue, ended)));
                }
                if ended {
                    return None;
                }
                match events.next().await {
                    Some(Ok(event)) => sealer.push(event, &mut queue),
                    Some(Err(error)) => {
                        ended = true;
                        return Some((Err(error), (events, sealer, queue, ended)));
                    }
                    None => return None,
                }
            }
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use router_canonical::{Message, Role, StopReason, Usage};

    fn key(byte: u8) -> SealKey {
        SealKey::from_bytes([byte; SEAL_KEY_LEN])
    }

    fn thinking(text: &str, signature: &str) -> ContentPart {
        ContentPart::Thinking {
            text: text.into(),
            signature: Some(signature.into()),
        }
    }

    fn history(parts: Vec<ContentPart>) -> Request {
        Request {
            model: "m".into(),
            messages: vec![
                Message::text(Role::System, "Be brief."),
                Message::text(Role::User, "Hi"),
                Message {
                    role: Role::Assistant,
                    content: parts,
                    content_was_string: false,
                    name: None,
                },
                Message::text(Role::User, "And?"),
            ],
            inbound: Some(Protocol::Messages),
            ..Request::default()
        }
    }

    #[test]
    fn a_seal_verifies_and_carries_its_dialect_and_replay_data() {
        let k = key(7);
        let seal = k.seal(SealedDialect::Responses, "enc-123", "I thought.");
        assert!(seal.starts_with(SEAL_PREFIX));
        assert_eq!(
            k.verify(&seal, "I thought."),
            Ok(Some(Sealed {
                dialect: SealedDialect::Responses,
                replay: "enc-123".into()
            }))
        );
        let empty = k.seal(SealedDialect::Chat, "", "");
        assert_eq!(
            k.verify(&empty, ""),
            Ok(Some(Sealed {
                dialect: SealedDialect::Chat,
                replay: String::new()
            }))
        );
    }

    #[test]
    fn anthropic_signatures_are_not_router_seals() {
        let k = key(7);
        for signature in ["EqQBCkgIAxABGAIiQL", "", "rtr", "rtrx.abc", "rtr1"] {
            assert_eq!(k.verify(signature, "t"), Ok(None), "{signature}");
        }
    }

    #[test]
    fn a_forged_tag_is_refused() {
        let k = key(7);
        let seal = k.seal(SealedDialect::Responses, "enc", "text");
        let (body, _) = seal.rsplit_once('.').unwrap();
        let forged = format!("{body}.{}", URL_SAFE_NO_PAD.encode([0u8; 32]));
        assert_eq!(k.verify(&forged, "text"), Err(SealRejection::BadTag));
    }

    #[test]
    fn a_payload_swapped_under_a_valid_tag_is_refused() {
        let k = key(7);
        let seal = k.seal(SealedDialect::Responses, "enc", "text");
        let (_, tag) = seal.rsplit_once('.').unwrap();
        let mut payload = vec![SealedDialect::Responses.byte()];
        payload.extend_from_slice(b"other");
        let swapped = format!("{SEAL_PREFIX}{}.{tag}", URL_SAFE_NO_PAD.encode(&payload));
        assert_eq!(k.verify(&swapped, "text"), Err(SealRejection::BadTag));
    }

    #[test]
    fn edited_thinking_text_no_longer_verifies() {
        let k = key(7);
        let seal = k.seal(SealedDialect::Chat, "", "text");
        assert_eq!(k.verify(&seal, "text!"), Err(SealRejection::BadTag));
    }

    #[test]
    fn a_seal_of_another_key_is_refused() {
        let seal = key(1).seal(SealedDialect::Responses, "enc", "text");
        assert_eq!(key(2).verify(&seal, "text"), Err(SealRejection::BadTag));
    }

    #[test]
    fn truncated_and_malformed_seals_are_refused() {
        let k = key(7);
        let seal = k.seal(SealedDialect::Responses, "enc", "text");
        let truncated = &seal[..seal.len() - 5];
        assert!(k.verify(truncated, "text").is_err());
        let no_tag = seal.rsplit_once('.').unwrap().0;
        assert_eq!(k.verify(no_tag, "text"), Err(SealRejection::Malformed));
        assert_eq!(
            k.verify("rtr1.!!!.???", "text"),
            Err(SealRejection::Malformed)
        );
        assert_eq!(k.verify("rtr1.", "text"), Err(SealRejection::Malformed));
        // A valid tag over a payload with an unknown dialect byte.
        let payload = [9u8, b'x'];
        let tag = k.tag(&payload, "text");
        let odd = format!(
            "{SEAL_PREFIX}{}.{}",
            URL_SAFE_NO_PAD.encode(payload),
            URL_SAFE_NO_PAD.encode(tag.as_ref())
        );
        assert_eq!(k.verify(&odd, "text"), Err(SealRejection::Malformed));
    }

    #[test]
    fn another_version_is_refused() {
        let k = key(7);
        let seal = k.seal(SealedDialect::Responses, "enc", "text");
        let v2 = seal.replacen("rtr1.", "rtr2.", 1);
        assert_eq!(k.verify(&v2, "text"), Err(SealRejection::UnknownVersion));
    }

    #[test]
    fn open_names_the_refused_block() {
        let k = key(7);
        let good = k.seal(SealedDialect::Chat, "", "a");
        let request = history(vec![thinking("a", &good), thinking("b", &good)]);
        let error = k.open(&request).unwrap_err();
        assert_eq!((error.message, error.part), (2, 1));
        assert_eq!(error.canonical_path(), "messages[2].content[1].signature");
    }

    #[test]
    fn for_route_restores_the_sealed_dialect_and_drops_the_rest() {
        let k = key(7);
        let from_responses = k.seal(SealedDialect::Responses, "enc-1", "r");
        let from_chat = k.seal(SealedDialect::Chat, "", "c");
        let request = history(vec![
            thinking("r", &from_responses),
            thinking("c", &from_chat),
            thinking("a", "anthropic-sig"),
            ContentPart::Text {
                text: "Answer".into(),
                cache_control: None,
            },
        ]);
        let opened = k.open(&request).unwrap();

        let (responses, signed_by) = opened.for_route(&request, Protocol::Responses);
        assert_eq!(signed_by, Some(Protocol::Responses));
        assert_eq!(
            responses.messages[2].content,
            vec![
                thinking("r", "enc-1"),
                ContentPart::Text {
                    text: "Answer".into(),
                    cache_control: None
                }
            ]
        );

        let (messages, signed_by) = opened.for_route(&request, Protocol::Messages);
        assert_eq!(signed_by, None);
        assert_eq!(messages.messages[2].content.len(), 2);
        assert_eq!(
            messages.messages[2].content[0],
            thinking("a", "anthropic-sig")
        );

        // Chat has no replay data: nothing to restore, the block is dropped.
        let (chat, signed_by) = opened.for_route(&request, Protocol::Chat);
        assert_eq!(signed_by, None);
        assert_eq!(chat.messages[2].content.len(), 2);
        assert_eq!(chat.messages[2].content[0], thinking("a", "anthropic-sig"));

        // A Responses block without encrypted_content is not replayed.
        let bare = k.seal(SealedDialect::Responses, "", "b");
        let request = history(vec![thinking("b", &bare)]);
        let (out, signed_by) = k
            .open(&request)
            .unwrap()
            .for_route(&request, Protocol::Responses);
        assert_eq!(signed_by, None);
        assert!(out.messages.iter().all(|m| m.role != Role::Assistant));
    }

    #[test]
    fn a_message_left_empty_is_left_out() {
        let k = key(7);
        let seal = k.seal(SealedDialect::Responses, "enc", "r");
        let request = history(vec![thinking("r", &seal)]);
        let (out, _) = k
            .open(&request)
            .unwrap()
            .for_route(&request, Protocol::Messages);
        assert_eq!(out.messages.len(), 3);
        assert!(out.messages.iter().all(|m| m.role != Role::Assistant));
    }

    #[test]
    fn a_complete_reply_gets_seals() {
        let k = key(7);
        let mut response = Response {
            id: "r".into(),
            model: "m".into(),
            output: vec![
                OutputBlock::Thinking {
                    text: "t".into(),
                    signature: Some("enc".into()),
                },
                OutputBlock::Thinking {
                    text: "u".into(),
                    signature: None,
                },
                OutputBlock::Text { text: "x".into() },
            ],
            stop_reason: StopReason::EndTurn,
            stop_sequence: None,
            usage: Usage::default(),
            created: 0,
        };
        k.seal_response(SealedDialect::Responses, &mut response);
        let OutputBlock::Thinking {
            text,
            signature: Some(signature),
        } = &response.output[0]
        else {
            panic!("not thinking");
        };
        assert_eq!(
            k.verify(signature, text).unwrap().unwrap().replay,
            "enc".to_owned()
        );
        let OutputBlock::Thinking {
            text,
            signature: Some(signature),
        } = &response.output[1]
        else {
            panic!("not thinking");
        };
        assert_eq!(k.verify(signature, text).unwrap().unwrap().replay, "");
    }

    #[test]
    fn a_stream_gets_one_seal_per_thinking_block_before_it_stops() {
        let k = key(7);
        let mut sealer = StreamSealer::new(k.clone(), SealedDialect::Responses);
        let mut out = VecDeque::new();
        let finish = StreamEvent::Finish {
            stop_reason: StopReason::EndTurn,
            stop_sequence: None,
            usage: Usage::default(),
        };
        for event in [
            StreamEvent::BlockStart {
                index: 0,
                block: BlockKind::Thinking,
            },
            StreamEvent::Delta {
                index: 0,
                delta: BlockDelta::Thinking("Hm".into()),
            },
            StreamEvent::Delta {
                index: 0,
                delta: BlockDelta::Signature("enc".into()),
            },
            StreamEvent::BlockStop { index: 0 },
            // A block the supplier never stops and never signs.
            StreamEvent::BlockStart {
                index: 1,
                block: BlockKind::Thinking,
            },
            finish.clone(),
        ] {
            sealer.push(event, &mut out);
        }
        let signatures: Vec<(usize, String)> = out
            .iter()
            .filter_map(|e| match e {
                StreamEvent::Delta {
                    index,
                    delta: BlockDelta::Signature(s),
                } => Some((*index, s.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(signatures.len(), 2);
        assert_eq!(
            k.verify(&signatures[0].1, "Hm").unwrap().unwrap().replay,
            "enc"
        );
        assert_eq!(k.verify(&signatures[1].1, "").unwrap().unwrap().replay, "");
        assert_eq!(out[3], StreamEvent::BlockStop { index: 0 });
        assert_eq!(out[6], StreamEvent::BlockStop { index: 1 });
        assert_eq!(out.back(), Some(&finish));
    }
}
