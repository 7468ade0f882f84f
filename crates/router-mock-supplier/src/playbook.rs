//! The playbook: scripts waiting to be played and the calls already received,
//! shared by the server and every [`crate::MockSupplier`] handle.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::recorded_call::RecordedCall;
use crate::script::Script;

/// The reply served when nothing else was scripted.
pub(crate) const BUILT_IN_DEFAULT_TEXT: &str = "Hello from the mock supplier.";

/// Queues, default script and call log behind one lock, so that recording a
/// call and choosing its script happen atomically and in arrival order.
#[derive(Debug)]
pub(crate) struct Playbook {
    inner: Mutex<PlaybookState>,
    /// The videos endpoint's jobs, plans and counters.
    pub(crate) videos: crate::videos_endpoint::Videos,
    /// Google access tokens issued.
    pub(crate) google: crate::google_auth::GoogleTokens,
}

#[derive(Debug)]
struct PlaybookState {
    global: VecDeque<Script>,
    per_model: HashMap<String, VecDeque<Script>>,
    default: Script,
    calls: Vec<RecordedCall>,
}

impl Default for Playbook {
    fn default() -> Playbook {
        Playbook {
            inner: Mutex::new(PlaybookState {
                global: VecDeque::new(),
                per_model: HashMap::new(),
                default: Script::reply(BUILT_IN_DEFAULT_TEXT),
                calls: Vec::new(),
            }),
            videos: crate::videos_endpoint::Videos::default(),
            google: crate::google_auth::GoogleTokens::default(),
        }
    }
}

impl Playbook {
    fn lock(&self) -> MutexGuard<'_, PlaybookState> {
        // The state stays consistent even if a holder panicked: every
        // critical section is a single push, pop or clear.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn enqueue(&self, script: Script) {
        self.lock().global.push_back(script);
    }

    pub(crate) fn enqueue_for(&self, upstream_model: &str, script: Script) {
        self.lock()
            .per_model
            .entry(upstream_model.to_owned())
            .or_default()
            .push_back(script);
    }

    pub(crate) fn set_default(&self, script: Script) {
        self.lock().default = script;
    }

    /// Records the call, then picks its script: the model's queue, else the
    /// global queue, else the default.
    pub(crate) fn record_and_choose(&self, call: RecordedCall) -> Script {
        let mut state = self.lock();
        let model = call.model().map(str::to_owned);
        state.calls.push(call);
        let from_model = model
            .and_then(|model| state.per_model.get_mut(&model))
            .and_then(VecDeque::pop_front);
        from_model
            .or_else(|| state.global.pop_front())
            .unwrap_or_else(|| state.default.clone())
    }

    /// Records a call that gets no script (refused before it is read).
    pub(crate) fn record(&self, call: RecordedCall) {
        self.lock().calls.push(call);
    }

    pub(crate) fn calls(&self) -> Vec<RecordedCall> {
        self.lock().calls.clone()
    }

    pub(crate) fn call_count(&self) -> usize {
        self.lock().calls.len()
    }

    pub(crate) fn calls_for(&self, upstream_model: &str) -> Vec<RecordedCall> {
        self.lock()
            .calls
            .iter()
            .filter(|call| call.model() == Some(upstream_model))
            .cloned()
            .collect()
    }

    /// Clears queues and calls; the default script is kept.
    pub(crate) fn reset(&self) {
        let mut state = self.lock();
        state.global.clear();
        state.per_model.clear();
        state.calls.clear();
        drop(state);
        self.videos.reset();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Instant;

    fn call(model: &str) -> RecordedCall {
        RecordedCall {
            query: None,
            path: "/v1/chat/completions".into(),
            headers: Vec::new(),
            body: json!({ "model": model }),
            received_at: Instant::now(),
        }
    }

    #[test]
    fn model_queue_comes_before_global_then_default() {
        let playbook = Playbook::default();
        playbook.enqueue(Script::reply("global"));
        playbook.enqueue_for("a", Script::reply("a1"));
        playbook.set_default(Script::reply("default"));
        assert_eq!(
            playbook.record_and_choose(call("b")),
            Script::reply("global")
        );
        assert_eq!(playbook.record_and_choose(call("a")), Script::reply("a1"));
        assert_eq!(
            playbook.record_and_choose(call("a")),
            Script::reply("default")
        );
        assert_eq!(playbook.call_count(), 3);
        assert_eq!(playbook.calls_for("a").len(), 2);
        playbook.reset();
        assert_eq!(playbook.call_count(), 0);
        assert_eq!(
            playbook.record_and_choose(call("a")),
            Script::reply("default")
        );
    }
}
