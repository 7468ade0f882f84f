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
//! The preferences live in PostgreSQL, so every instance sees them. A
//! failed read reports `miss` and routes as usual, never an error.

use crate::app::{App, PromptCacheSettings};
use router_canonical::{ContentPart, PromptCacheMode, Request, Role};
use router_core::fingerprint::Fingerprint;
use router_core::store::ApiKeyRecord;
use router_store::affinity::AffinityHint;

/// The response header (chat, responses and messages only, CF-10).
pub const HEADER: &str = "x-ci-prompt-cache-affinity";

/// What the affinity store said about a participating prefix.
pub struct Affinity {
    fingerprint: [u8; 32],
    /// `None`: the read failed.
    hint: Option<Option<AffinityHint>>,
}

impl Affinity {
    /// The prefix's stored preference, when the request participates.
    pub async fn lookup(
        app: &App,
        headers: &http::HeaderMap,
        key: &ApiKeyRecord,
        request: &Request,
    ) -> Option<Affinity> {
        let fingerprint = fingerprint(&app.prompt_cache, headers, key, request)?;
        let hint = match app.database().affinity_hint(&fingerprint).await {
            Ok(hint) => Some(hint),
            Err(e) => {
                tracing::warn!(error = %e, "prompt-cache affinity read failed");
                None
            }
        };
        Some(Affinity { fingerprint, hint })
    }

    /// The route to try first: a preference that still holds.
    pub fn preferred_route(&self) -> Option<String> {
        self.preferred().map(str::to_owned)
    }

    fn preferred(&self) -> Option<&str> {
        match &self.hint {
            Some(Some(hint)) if hint.fresh => Some(&hint.route_id),
            _ => None,
        }
    }

    /// The state the response reports, once `served` (the route of the
    /// success) is known; `first` is the route of the first attempt.
    pub fn state(&self, first: Option<&str>, served: Option<&str>) -> &'static str {
        let Some(hint) = &self.hint else {
            return "miss";
        };
        if served.is_none() || first != served {
            // Served by a fallback route (G-23); a same-route retry keeps
            // the first attempt's route, so its state.
            return "miss";
        }
        match hint {
            None => "new",
            Some(hint) if hint.fresh && Some(hint.route_id.as_str()) == served => "hit",
            Some(_) => "stale",
        }
    }

    /// The route that served the prefix is preferred from now on.
    pub async fn record(&self, app: &App, served: &str) {
        let ttl = i32::try_from(app.prompt_cache.affinity_ttl.as_secs()).unwrap_or(i32::MAX);
        // The preference held (`hit`): extend it, never overwrite a newer
        // choice another instance made meanwhile. Otherwise a new choice.
        let preferred = self.preferred() == Some(served);
        if let Err(e) = app
            .database()
            .record_affinity(&self.fingerprint, served, ttl, preferred)
            .await
        {
            tracing::warn!(error = %e, "could not record prompt-cache affinity");
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
/// not participate (mode `off`, or no prefix long enough).
fn fingerprint(
    settings: &PromptCacheSettings,
    headers: &http::HeaderMap,
    key: &ApiKeyRecord,
    request: &Request,
) -> Option<[u8; 32]> {
    if request.prompt_cache == PromptCacheMode::Off {
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
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let scope = match header("x-ci-prompt-cache-scope").unwrap_or("session") {
        "org" => format!("org\0{}", key.account_id),
        "user" => {
            // GP-34: the end user; without one, the key alone.
            let user = header("x-ci-end-user")
                .or(request.end_user.as_deref())
                .unwrap_or("");
            format!("user\0{}\0{user}", key.key_id)
        }
        _ => format!(
            "session\0{}\0{}",
            key.key_id,
            header("x-ci-prompt-cache-session").unwrap_or("")
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
