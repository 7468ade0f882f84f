//! Crash points for the reliability suite (RELIABILITY.md §3 c, issue 33):
//! a request that reaches an armed point logs `failpoint reached` and waits
//! there forever, so the suite can SIGKILL the process at that instant and
//! check what a restart finds. Armed by the `FAILPOINTS` variable
//! (`K1,K4`: comma-separated names), read once. Compiled into debug builds
//! and into builds with the `failpoints` feature; a release build without
//! the feature has no point and reads no variable.
//!
//! The points: `K1` the hold committed, before any supplier call; `K2` the
//! supplier's complete answer received, before settling; `K3` mid-stream
//! (a content event handed to the client, before the next one is read);
//! `K4` about to settle; `K5` inside the settlement's transaction, its
//! statement run, before COMMIT (`router_store`, which runs the settlement
//! batch in an explicit transaction only while `K5` is armed); `K6` the
//! settlement committed, before the answer is written; `K7` a video
//! submission accepted by the supplier, before its task id is stored.

/// Whether `point` is armed in this process.
#[cfg(any(debug_assertions, feature = "failpoints"))]
pub fn armed(point: &str) -> bool {
    static ARMED: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    ARMED
        .get_or_init(|| {
            std::env::var("FAILPOINTS")
                .unwrap_or_default()
                .split(',')
                .map(|p| p.trim().to_owned())
                .filter(|p| !p.is_empty())
                .collect()
        })
        .iter()
        .any(|p| p == point)
}

/// Waits forever at `point` when it is armed; returns at once otherwise.
#[cfg(any(debug_assertions, feature = "failpoints"))]
pub async fn reached(point: &'static str) {
    if armed(point) {
        tracing::warn!(point, "failpoint reached");
        std::future::pending::<()>().await;
    }
}

/// A release build without the `failpoints` feature: no point is armed.
#[cfg(not(any(debug_assertions, feature = "failpoints")))]
#[inline(always)]
pub fn armed(_point: &str) -> bool {
    false
}

/// A release build without the `failpoints` feature: no point.
#[cfg(not(any(debug_assertions, feature = "failpoints")))]
#[inline(always)]
pub async fn reached(_point: &'static str) {}
