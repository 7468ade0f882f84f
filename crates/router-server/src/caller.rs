//! Who a route's guard let through (`dispatch::guard`), as the handlers
//! receive it, and what a handler may ask of it (a caller its row's rule
//! cannot let through is a misconfiguration: 500). The rules of each kind of
//! caller are `dispatch.rs`'s.

use crate::session::Session;
use router_canonical::{ApiError, ErrorCode};
use router_catalog::Viewer;
use router_core::store::ApiKeyRecord;
use uuid::Uuid;

/// Who the guard let through.
pub enum Caller {
    /// A `Public` route.
    Anonymous,
    /// An API key with the route's scope.
    Key(ApiKeyRecord),
    /// A signed-in browser session (whose mutation came from our origin).
    Session(Session),
    /// The operator token.
    Operator,
}

impl Caller {
    /// The key or session of an `ApiKeyOrSession` route.
    pub fn viewer(self) -> Result<Viewer, ApiError> {
        match self {
            Caller::Key(key) => Ok(Viewer::Key(key)),
            Caller::Session(session) => Ok(Viewer::Session(session.id)),
            Caller::Anonymous | Caller::Operator => Err(misconfigured()),
        }
    }

    /// The account of a key or a session.
    pub fn account_id(&self) -> Result<Uuid, ApiError> {
        match self {
            Caller::Key(key) => Ok(key.account_id),
            Caller::Session(session) => Ok(session.account_id),
            Caller::Anonymous | Caller::Operator => Err(misconfigured()),
        }
    }

    /// The session of a `Session` route.
    pub fn session(self) -> Result<Session, ApiError> {
        match self {
            Caller::Session(session) => Ok(session),
            Caller::Anonymous | Caller::Operator | Caller::Key(_) => Err(misconfigured()),
        }
    }
}

/// A handler asked for a caller its row's rule does not let through.
pub fn misconfigured() -> ApiError {
    ApiError::new(ErrorCode::InternalError, "This endpoint is misconfigured.")
}
