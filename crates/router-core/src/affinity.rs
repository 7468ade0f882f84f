//! Prompt-cache routing affinity (F-09, F-13..F-17, CF-10, G-23, GP-34):
//! a request whose cacheable prefix participates prefers, for the
//! configured time, the route that served the same prefix in the same
//! scope, so the supplier's prompt cache stays warm.
//!
//! The prefix is the tools and the messages up to the last one holding a
//! `cache_control` marker; without markers, everything but the last
//! message, when it is at least `min_prefix_tokens` (estimated) long. The
//! scope is `session` (key + `x-ci-prompt-cache-session` label), `user`
//! (key + `X-CI-End-User`, GP-34) or `org` (the account). A preference
//! only reorders the routes the plan already allowed: it never overrides
//! capability filters, the discount floor or zero data retention.
//!
//! The preferences live behind [`AffinityStore`](crate::store::AffinityStore),
//! so every instance sees them. A failed read reports `miss` and routes as
//! usual, never an error.

use crate::fingerprint::Fingerprint;
use crate::gateway_request::PromptCacheMode;
use crate::store::{AffinityHint, ApiKeyRecord};
use router_canonical::{ContentPart, HeaderSource, Request, Role};
use std::time::Duration;

/// Prompt-cache routing affinity's settings (F-14, F-16).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromptCacheSettings {
    /// Without a `cache_control` marker, a prefix takes part in affinity
    /// from this many (estimated) tokens
    /// (`ROUTER_PROMPT_CACHE_MIN_PREFIX_TOKENS`).
    pub min_prefix_tokens: u64,
    /// How long the route that served a prefix stays preferred
    /// (`ROUTER_PROMPT_CACHE_AFFINITY_TTL_SECS`).
    pub affinity_ttl: Duration,
}

impl Default for PromptCacheSettings {
    fn default() -> Self {
        PromptCacheSettings {
            min_prefix_tokens: 1024,
            affinity_ttl: Duration::from_secs(300),
        }
    }
}

impl PromptCacheSettings {
    /// [`PromptCacheSettings::affinity_ttl`] in whole seconds, as stored.
    pub(crate) fn ttl_seconds(&self) -> i32 {
        i32::try_from(self.affinity_ttl.as_secs()).unwrap_or(i32::MAX)
    }
}

/// What the response reports (`x-ci-prompt-cache-affinity`) about a
/// participating prefix once a route served it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AffinityState {
    /// The preferred route served it.
    Hit,
    /// No preference was stored: this route is preferred from now on.
    New,
    /// A preference had expired, or named a route that did not serve it.
    Stale,
    /// The preference could not be read, or a fallback route served it.
    Miss,
}

impl AffinityState {
    pub fn as_str(self) -> &'static str {
        match self {
            AffinityState::Hit => "hit",
            AffinityState::New => "new",
            AffinityState::Stale => "stale",
            AffinityState::Miss => "miss",
        }
    }
}

/// What the affinity store said about a participating prefix.
pub(crate) struct Affinity {
    pub(crate) fingerprint: [u8; 32],
    /// `None`: the read failed.
    pub(crate) hint: Option<Option<AffinityHint>>,
}

impl Affinity {
    /// The route to try first: a preference that still holds.
    pub(crate) fn preferred_route(&self) -> Option<String> {
        self.preferred().map(str::to_owned)
    }

    /// Whether `served` is the preference that held: then it is only
    /// extended, never written over another instance's newer choice.
    pub(crate) fn preferred_is(&self, served: &str) -> bool {
        self.preferred() == Some(served)
    }

    fn preferred(&self) -> Option<&str> {
        match &self.hint {
            Some(Some(hint)) if hint.fresh => Some(&hint.route_id),
            _ => None,
        }
    }

    /// The state the response reports, once `served` (the route of the
    /// success) is known; `first` is the route of the first attempt.
    pub(crate) fn state(&self, first: Option<&str>, served: Option<&str>) -> AffinityState {
        let Some(hint) = &self.hint else {
            return AffinityState::Miss;
        };
        if served.is_none() || first != served {
            // Served by a fallback route (G-23); a same-route retry keeps
            // the first attempt's route, so its state.
            return AffinityState::Miss;
        }
        match hint {
            None => AffinityState::New,
            Some(hint) if hint.fresh && Some(hint.route_id.as_str()) == served => {
                AffinityState::Hit
            }
            Some(_) => AffinityState::Stale,
        }
    }
}

fn part_marked(part: &ContentPart) -> bool {
    match part {
        ContentPart::Text { cache_control, .. } | ContentPart::Image { cache_control, .. } => {
            cache_control.is_some()
        }
        ContentPart::ToolResult {
            content,
            cache_control,
            ..
        } => cache_control.is_some() || content.iter().any(part_marked),
        _ => false,
    }
}

/// The SHA-256 of (scope, model, prefix), or `None` when the request does
/// not participate (`mode` `off`, or no prefix long enough). The scope comes
/// from `headers`: `x-ci-prompt-cache-scope` (`session` by default) and
/// the header that completes it.
pub(crate) fn fingerprint(
    settings: &PromptCacheSettings,
    headers: &dyn HeaderSource,
    key: &ApiKeyRecord,
    request: &Request,
    mode: PromptCacheMode,
) -> Option<[u8; 32]> {
    if mode == PromptCacheMode::Off {
        return None;
    }
    let messages = &request.messages;
    let last_marked = messages
        .iter()
        .rposition(|m| m.content.iter().any(part_marked));
    let tools_marked = request.tools.iter().any(|t| t.cache_control.is_some());
    let prefix = match last_marked {
        Some(at) => &messages[..=at],
        // Tools marked alone: the tools and the leading instructions.
        None if tools_marked => {
            let system = messages
                .iter()
                .take_while(|m| matches!(m.role, Role::System | Role::Developer))
                .count();
            &messages[..system]
        }
        None => &messages[..messages.len().saturating_sub(1)],
    };
    if prefix.is_empty() && !tools_marked {
        return None;
    }
    let scope = match headers
        .header("x-ci-prompt-cache-scope")
        .unwrap_or("session")
    {
        "org" => format!("org\0{}", key.account_id),
        "user" => {
            // GP-34: the end user; without one, the key alone.
            let user = headers
                .header("x-ci-end-user")
                .or(request.end_user.as_deref())
                .unwrap_or("");
            format!("user\0{}\0{user}", key.key_id)
        }
        _ => format!(
            "session\0{}\0{}",
            key.key_id,
            headers.header("x-ci-prompt-cache-session").unwrap_or("")
        ),
    };
    // Hashed as it is walked, not rendered as JSON first (see `Fingerprint`).
    let mut digest = Fingerprint::default();
    digest.bytes(scope.as_bytes());
    digest.bytes(request.model.as_bytes());
    let fed = digest.value(&request.tools).ok()? + digest.value(prefix).ok()?;
    let unmarked = last_marked.is_none() && !tools_marked;
    // About four bytes per token: an estimate, not a count.
    let estimated_tokens = fed / 4;
    if unmarked && estimated_tokens < settings.min_prefix_tokens {
        return None;
    }
    Some(digest.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::KeyPolicy;
    use router_canonical::{CacheControl, Message};
    use std::sync::Arc;
    use uuid::Uuid;

    fn key() -> ApiKeyRecord {
        ApiKeyRecord {
            key_id: Uuid::from_u128(1),
            account_id: Uuid::from_u128(2),
            scopes: Vec::new(),
            expires_at: None,
            policy: Arc::new(KeyPolicy::default()),
            account_zdr: false,
        }
    }

    fn request(system: &str) -> Request {
        Request {
            model: "m".into(),
            messages: vec![
                Message::text(Role::System, system),
                Message::text(Role::User, "question"),
            ],
            ..Default::default()
        }
    }

    /// Request headers as (lower-case name, value) pairs.
    struct Headers<'a>(&'a [(&'a str, &'a str)]);

    impl HeaderSource for Headers<'_> {
        fn header(&self, name: &str) -> Option<&str> {
            self.0.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
        }
    }

    fn of(request: &Request, headers: &[(&str, &str)]) -> Option<[u8; 32]> {
        fingerprint(
            &PromptCacheSettings::default(),
            &Headers(headers),
            &key(),
            request,
            PromptCacheMode::Passthrough,
        )
    }

    #[test]
    fn an_unmarked_prefix_takes_part_from_the_minimum_length() {
        assert_eq!(of(&request("short"), &[]), None);
        let long = request(&"x".repeat(4 * 1024));
        assert!(of(&long, &[]).is_some());
        let off = fingerprint(
            &PromptCacheSettings::default(),
            &Headers(&[]),
            &key(),
            &long,
            PromptCacheMode::Off,
        );
        assert_eq!(off, None);
    }

    #[test]
    fn a_marked_prefix_takes_part_at_any_length_within_its_scope() {
        let mut marked = request("short");
        if let Some(ContentPart::Text { cache_control, .. }) =
            marked.messages[0].content.first_mut()
        {
            *cache_control = Some(CacheControl {
                kind: "ephemeral".into(),
                ttl: None,
            });
        }
        let label = ("x-ci-prompt-cache-session", "a");
        let session = of(&marked, &[label]);
        assert!(session.is_some());
        let explicit = [("x-ci-prompt-cache-scope", "session"), label];
        assert_eq!(of(&marked, &explicit), session);
        assert_ne!(of(&marked, &[("x-ci-prompt-cache-session", "b")]), session);
        let org = [("x-ci-prompt-cache-scope", "org"), label];
        assert_ne!(of(&marked, &org), session);
        let user = [("x-ci-prompt-cache-scope", "user"), ("x-ci-end-user", "u")];
        assert_ne!(of(&marked, &user), session);
        // The last message is not part of the prefix.
        marked.messages[1] = Message::text(Role::User, "another question");
        assert_eq!(of(&marked, &[label]), session);
    }

    #[test]
    fn the_state_says_whether_the_preference_served() {
        let affinity = |hint| Affinity {
            fingerprint: [0; 32],
            hint,
        };
        let stored = |route: &str, fresh| {
            Some(Some(AffinityHint {
                route_id: route.into(),
                fresh,
                remaining: Duration::ZERO,
            }))
        };
        let state = |a: &Affinity| a.state(Some("r1"), Some("r1"));
        assert_eq!(state(&affinity(None)), AffinityState::Miss, "unread");
        assert_eq!(state(&affinity(Some(None))), AffinityState::New);
        assert_eq!(state(&affinity(stored("r1", true))), AffinityState::Hit);
        assert_eq!(state(&affinity(stored("r1", false))), AffinityState::Stale);
        assert_eq!(state(&affinity(stored("r2", true))), AffinityState::Stale);
        let fallback = affinity(stored("r1", true)).state(Some("r1"), Some("r2"));
        assert_eq!(fallback, AffinityState::Miss);
        assert_eq!(
            affinity(stored("r1", true)).preferred_route().as_deref(),
            Some("r1")
        );
        assert_eq!(affinity(stored("r1", false)).preferred_route(), None);
    }
}
