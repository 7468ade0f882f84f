//! The pricing change feed (`GET /v1/pricing/changes`, L-20..L-30, GP-28,
//! CF-25): the latest price change of each model the viewer may use,
//! since an instant, in pages.
//!
//! The first page freezes the release in force; its cursor carries that
//! release and the last entry's `(changed_at, position)`, bound to `since`,
//! the credential and the key's policy version, and signed (HMAC-SHA256)
//! with a secret kept in PostgreSQL, so every instance accepts every
//! instance's cursors and nobody can forge or edit one. The credential is
//! bound by a keyed tag, never carried in the clear: a cursor shown in a log
//! or a shared link does not tell the key's (or session's) id (issue 33).

use crate::view::rfc3339;
use crate::{CatalogError, Params, PublishedCatalog, Viewer};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use ring::hmac;
use router_store::catalog_releases::{self, ChangeRow};
use serde_json::{Value, json};

/// The largest page, and the default (L-22).
pub(crate) const MAX_LIMIT: usize = 100;
/// The longest cursor read (L-23).
const MAX_CURSOR_CHARS: usize = 2048;
/// 2: the credential bound by a tag (1 carried the key's id in the clear;
/// such a cursor is refused, and the client starts again from `since`).
const CURSOR_VERSION: u8 = 2;
/// Bytes of the credential tag.
const BINDING_LEN: usize = 16;

/// What a cursor carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub release: i64,
    /// `since`, in microseconds since the epoch.
    pub since: i64,
    /// The last entry served: its `changed_at` (µs) and position.
    pub after: (i64, i64),
    /// [`binding`] of the credential and its policy version.
    pub binding: [u8; BINDING_LEN],
}

const PAYLOAD_LEN: usize = 1 + 8 + 8 + 8 + 8 + BINDING_LEN;

/// The tag that binds a cursor to a credential kind, its id and policy
/// version, under the deployment's cursor key: equal for the same viewer,
/// and telling nothing about the id without the key.
pub fn binding(
    key: &hmac::Key,
    (kind, credential, policy_version): (u8, uuid::Uuid, i64),
) -> [u8; BINDING_LEN] {
    let mut message = b"pricing-cursor-binding".to_vec();
    message.push(kind);
    message.extend_from_slice(credential.as_bytes());
    message.extend_from_slice(&policy_version.to_be_bytes());
    let tag = hmac::sign(key, &message);
    let mut out = [0u8; BINDING_LEN];
    out.copy_from_slice(&tag.as_ref()[..BINDING_LEN]);
    out
}

impl Cursor {
    fn payload(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(PAYLOAD_LEN);
        out.push(CURSOR_VERSION);
        out.extend_from_slice(&self.release.to_be_bytes());
        out.extend_from_slice(&self.since.to_be_bytes());
        out.extend_from_slice(&self.after.0.to_be_bytes());
        out.extend_from_slice(&self.after.1.to_be_bytes());
        out.extend_from_slice(&self.binding);
        out
    }

    pub fn seal(&self, key: &hmac::Key) -> String {
        let mut bytes = self.payload();
        let tag = hmac::sign(key, &bytes);
        bytes.extend_from_slice(tag.as_ref());
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The cursor in `text` if `key` signed it.
    pub fn open(text: &str, key: &hmac::Key) -> Option<Cursor> {
        let bytes = URL_SAFE_NO_PAD.decode(text).ok()?;
        if bytes.len() != PAYLOAD_LEN + 32 {
            return None;
        }
        let (payload, tag) = bytes.split_at(PAYLOAD_LEN);
        hmac::verify(key, payload, tag).ok()?;
        if payload[0] != CURSOR_VERSION {
            return None;
        }
        let i64_at = |at: usize| {
            payload
                .get(at..at + 8)
                .and_then(|b| b.try_into().ok())
                .map(i64::from_be_bytes)
        };
        Some(Cursor {
            release: i64_at(1)?,
            since: i64_at(9)?,
            after: (i64_at(17)?, i64_at(25)?),
            binding: payload.get(33..33 + BINDING_LEN)?.try_into().ok()?,
        })
    }
}

/// A page's request: `since`, the page size and the previous page's cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangesQuery {
    pub since: DateTime<Utc>,
    pub limit: usize,
    /// The previous page's `next_cursor`, as sent.
    pub cursor: Option<String>,
}

impl ChangesQuery {
    /// `since` (required), `limit` and `cursor`, in that order.
    pub fn read(params: &(impl Params + ?Sized)) -> Result<ChangesQuery, CatalogError> {
        let since = parse_since(params.required("since")?).ok_or(CatalogError::Since)?;
        let limit = match params.one("limit")? {
            None => MAX_LIMIT,
            Some(text) => text
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=MAX_LIMIT).contains(n) && text.bytes().all(|b| b.is_ascii_digit()))
                .ok_or(CatalogError::Limit)?,
        };
        let cursor = match params.one("cursor")? {
            Some(text) if text.chars().count() > MAX_CURSOR_CHARS => {
                return Err(CatalogError::Cursor);
            }
            cursor => cursor.map(str::to_owned),
        };
        Ok(ChangesQuery {
            since,
            limit,
            cursor,
        })
    }
}

/// `since`: RFC 3339 with an explicit offset (L-21).
fn parse_since(text: &str) -> Option<DateTime<Utc>> {
    // chrono also takes a space for `T`; RFC 3339 profiles want the `T`.
    if text.len() < 11 || !matches!(text.as_bytes()[10], b'T' | b't') {
        return None;
    }
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Whether the key may see changes of `row`'s model: by ID, or by an alias
/// the model had in the change's entry.
fn allowed(viewer: &Viewer, row: &ChangeRow, entry: &Value) -> bool {
    let Some(allowed) = viewer.allowed_models() else {
        return true;
    };
    allowed.iter().any(|name| {
        *name == row.model_id
            || entry["aliases"]
                .as_array()
                .is_some_and(|aliases| aliases.iter().any(|a| a == name))
    })
}

fn parse_json(text: Option<&str>) -> Value {
    text.and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or(Value::Null)
}

fn unavailable(error: router_core::store::StoreError) -> CatalogError {
    tracing::error!(error = %error, "reading pricing changes failed");
    CatalogError::ChangesUnavailable(error)
}

impl PublishedCatalog {
    /// The cursor key of this deployment, loaded (or created) once.
    async fn cursor_key(&self) -> Result<&hmac::Key, CatalogError> {
        self.inner
            .cursor_key
            .get_or_try_init(|| async {
                let mut candidate = [0u8; 32];
                ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut candidate)
                    .map_err(|_| CatalogError::NoRandomness)?;
                let load = async {
                    let mut conn = self.inner.database.connection().await?;
                    catalog_releases::cursor_key(&mut conn, &candidate).await
                };
                let secret = load.await.map_err(|e| {
                    tracing::error!(error = %e, "loading the cursor key failed");
                    CatalogError::ChangesUnavailable(e)
                })?;
                Ok(hmac::Key::new(hmac::HMAC_SHA256, &secret))
            })
            .await
    }

    /// One page of the feed for `viewer`: `{data, next_cursor, source,
    /// pricing_checked_at}`. Without a cursor, of the release in force;
    /// with one, of the cursor's release (L-25), after its last entry.
    pub async fn pricing_changes(
        &self,
        viewer: &Viewer,
        query: &ChangesQuery,
    ) -> Result<Value, CatalogError> {
        let since_micros = query.since.timestamp_micros();
        let cursor = match &query.cursor {
            None => None,
            Some(text) => {
                let cursor =
                    Cursor::open(text, self.cursor_key().await?).ok_or(CatalogError::Cursor)?;
                // L-24: same since, same credential, same model-policy context.
                let expected = binding(self.cursor_key().await?, viewer.binding());
                if cursor.since != since_micros || cursor.binding != expected {
                    return Err(CatalogError::Cursor);
                }
                Some(cursor)
            }
        };
        // L-25: without a cursor, the release in force; with one, its release.
        let release = cursor
            .as_ref()
            .map_or_else(|| self.current().info.release, |c| c.release);
        let rows = {
            let mut conn = self
                .inner
                .database
                .connection()
                .await
                .map_err(unavailable)?;
            catalog_releases::latest_changes(&mut conn, release, query.since)
                .await
                .map_err(unavailable)?
        };
        let after = cursor.as_ref().map(|c| c.after);
        let mut visible = rows
            .into_iter()
            .map(|row| {
                let model = parse_json(row.model.as_deref());
                (row, model)
            })
            .filter(|(row, model)| allowed(viewer, row, model))
            .filter(|(row, _)| {
                after.is_none_or(|a| (row.changed_at.timestamp_micros(), row.position) > a)
            })
            .peekable();
        let mut data = Vec::new();
        let mut last = None;
        while data.len() < query.limit {
            let Some((row, model)) = visible.next() else {
                break;
            };
            last = Some((row.changed_at.timestamp_micros(), row.position));
            data.push(json!({
                "model_id": row.model_id,
                "kind": row.kind,
                "changed_at": rfc3339(row.changed_at),
                "model": model,
                "previous": parse_json(row.previous.as_deref()),
                "current": parse_json(row.current.as_deref()),
            }));
        }
        let next_cursor = match (visible.peek(), last) {
            (Some(_), Some(after)) => {
                let key = self.cursor_key().await?;
                let cursor = Cursor {
                    release,
                    since: since_micros,
                    after,
                    binding: binding(key, viewer.binding()),
                };
                Value::String(cursor.seal(key))
            }
            _ => Value::Null,
        };
        Ok(json!({
            "data": data,
            "next_cursor": next_cursor,
            "source": "configured_catalog",
            "pricing_checked_at": null,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> hmac::Key {
        hmac::Key::new(hmac::HMAC_SHA256, &[7u8; 32])
    }

    fn sample() -> Cursor {
        Cursor {
            release: 3,
            since: 1_700_000_000_000_000,
            after: (1_700_000_000_123_456, 42),
            binding: binding(&key(), (1, uuid::Uuid::from_u128(0x1234), 5)),
        }
    }

    /// Issue 33: the cursor carried the key's id in the clear.
    #[test]
    fn a_cursor_does_not_carry_the_credential_id() {
        let id = uuid::Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
        let cursor = Cursor {
            binding: binding(&key(), (1, id, 5)),
            ..sample()
        };
        let bytes = URL_SAFE_NO_PAD.decode(cursor.seal(&key())).unwrap();
        let raw = id.as_bytes();
        assert!(!bytes.windows(raw.len()).any(|w| w == raw));
        assert!(!bytes.windows(4).any(|w| w == &raw[..4]));
        // Each part of the binding changes the tag.
        let tag = binding(&key(), (1, id, 5));
        assert_ne!(tag, binding(&key(), (2, id, 5)));
        assert_ne!(tag, binding(&key(), (1, uuid::Uuid::from_u128(1), 5)));
        assert_ne!(tag, binding(&key(), (1, id, 6)));
        let other = hmac::Key::new(hmac::HMAC_SHA256, &[8u8; 32]);
        assert_ne!(tag, binding(&other, (1, id, 5)));
    }

    #[test]
    fn cursors_round_trip_and_fit() {
        let text = sample().seal(&key());
        assert!(text.len() <= MAX_CURSOR_CHARS);
        assert_eq!(Cursor::open(&text, &key()), Some(sample()));
        let other = hmac::Key::new(hmac::HMAC_SHA256, &[8u8; 32]);
        assert_eq!(
            Cursor::open(&text, &other),
            None,
            "another deployment's key"
        );
    }

    /// Issue 17: every byte flipped is refused.
    #[test]
    fn every_tampered_byte_is_refused() {
        let text = sample().seal(&key());
        let bytes = URL_SAFE_NO_PAD.decode(&text).unwrap();
        for i in 0..bytes.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut tampered = bytes.clone();
                tampered[i] ^= flip;
                let tampered = URL_SAFE_NO_PAD.encode(&tampered);
                assert_eq!(
                    Cursor::open(&tampered, &key()),
                    None,
                    "byte {i} ^ {flip:#x}"
                );
            }
        }
        assert_eq!(Cursor::open(&text[..text.len() - 1], &key()), None);
        assert_eq!(Cursor::open("garbage", &key()), None);
    }

    #[test]
    fn since_needs_an_explicit_offset() {
        assert!(parse_since("2025-01-01T00:00:00Z").is_some());
        assert!(parse_since("2025-01-01T00:00:00+02:00").is_some());
        assert!(parse_since("2025-01-01T00:00:00").is_none());
        assert!(parse_since("2025-01-01").is_none());
        assert!(parse_since("2025-01-01 00:00:00Z").is_none());
    }
}
