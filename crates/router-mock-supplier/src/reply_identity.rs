//! [`ReplyIdentity`]: what every object of one reply shares (serial number,
//! creation time, model), whatever the protocol.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Identity shared by every object and event of one reply. Each protocol
/// builds its ids from the serial with its own prefix (`chatcmpl-mock-7`,
/// `msg_mock_7`, `resp_mock_7`), so ids are unique across protocols.
#[derive(Debug, Clone)]
pub(crate) struct ReplyIdentity {
    serial: u64,
    /// Unix seconds when the reply was started.
    pub(crate) created: u64,
    /// The request's model, echoed back (empty when the request had none).
    pub(crate) model: String,
}

impl ReplyIdentity {
    /// A fresh serial, stamped now, echoing `model`.
    pub(crate) fn new(model: &str) -> ReplyIdentity {
        static NEXT_SERIAL: AtomicU64 = AtomicU64::new(1);
        let created = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|elapsed| elapsed.as_secs())
            .unwrap_or(0);
        ReplyIdentity {
            serial: NEXT_SERIAL.fetch_add(1, Ordering::Relaxed),
            created,
            model: model.to_owned(),
        }
    }

    /// `prefix` followed by the serial.
    pub(crate) fn id(&self, prefix: &str) -> String {
        format!("{prefix}{}", self.serial)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serials_differ_and_ids_carry_the_prefix() {
        let first = ReplyIdentity::new("m");
        let second = ReplyIdentity::new("m");
        assert_ne!(first.id("x-"), second.id("x-"));
        assert!(first.id("msg_mock_").starts_with("msg_mock_"));
        assert_eq!(first.model, "m");
    }
}
