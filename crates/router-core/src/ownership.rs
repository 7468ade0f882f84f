//! Ownership: another account's resource looks exactly like an unknown one
//! . Every lookup of a customer resource by ID goes through
//! [`owned_or_not_found`] (or [`parse_id`] first), so an invalid, unknown,
//! foreign, expired or deleted ID gets one status and one body per resource
//! kind, and the answer tells a prober nothing.
//!
//! A new resource kind adds a [`Resource`] variant (its 404 code) and an
//! [`Owned`] impl on its record. Prefer filtering by owner in the query
//! itself; then pass the `Option` it returns here with the caller as owner,
//! so the reply stays the same either way.

use crate::product_codes;
use crate::store::VideoJob;
use router_canonical::{ApiError, ErrorCode};
use uuid::Uuid;

/// A kind of customer resource looked up by ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// Owned by the account (I-25, GP-12).
    Upload,
    /// Owned by the team (account) of the key (O-20, O-23).
    Video,
    /// Owned by the account (M-05, M-12, GP-12).
    Channel,
    /// Owned by the account (F-04).
    Experiment,
    /// A request's history (N-10), owned by the account that made it.
    Request,
}

impl Resource {
    /// The one reply for a missing resource of this kind. The message names
    /// no ID, so the bodies of two misses are byte-for-byte the same.
    pub fn not_found(self) -> ApiError {
        let (code, message) = match self {
            Resource::Upload => (product_codes::UPLOAD_NOT_FOUND, "No such upload."),
            Resource::Video => (product_codes::TASK_NOT_FOUND, "No such video."),
            Resource::Channel => (product_codes::CHANNEL_NOT_FOUND, "No such channel."),
            Resource::Experiment => (product_codes::EXPERIMENT_NOT_FOUND, "No such experiment."),
            Resource::Request => (ErrorCode::NotFound, "No such request."),
        };
        ApiError::new(code, message)
    }
}

/// A record that belongs to one account.
pub trait Owned {
    fn owner(&self) -> Uuid;
}

impl Owned for VideoJob {
    fn owner(&self) -> Uuid {
        self.account_id
    }
}

/// The record if `caller` owns it; otherwise the kind's not-found error,
/// the same as for an ID that does not exist.
pub fn owned_or_not_found<T: Owned>(
    kind: Resource,
    found: Option<T>,
    caller: Uuid,
) -> Result<T, ApiError> {
    match found {
        Some(record) if record.owner() == caller => Ok(record),
        _ => Err(kind.not_found()),
    }
}

/// A path ID of a UUID-keyed resource; a malformed one is simply not found.
pub fn parse_id(kind: Resource, id: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(id).map_err(|_| kind.not_found())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Thing(Uuid);
    impl Owned for Thing {
        fn owner(&self) -> Uuid {
            self.0
        }
    }

    #[test]
    fn foreign_unknown_and_invalid_are_one_answer() {
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        for kind in [
            Resource::Upload,
            Resource::Video,
            Resource::Channel,
            Resource::Experiment,
            Resource::Request,
        ] {
            assert_eq!(owned_or_not_found(kind, Some(Thing(a)), a).unwrap().0, a);
            let foreign = owned_or_not_found(kind, Some(Thing(a)), b).unwrap_err();
            let unknown = owned_or_not_found::<Thing>(kind, None, b).unwrap_err();
            let invalid = parse_id(kind, "..%2f").unwrap_err();
            assert_eq!(foreign, unknown);
            assert_eq!(foreign, invalid);
            assert_eq!(foreign.status(), 404);
        }
    }
}
