//! The operator's operations: accounts and their credits, API keys and
//! their policies, browser sessions, A/B experiments and the history of a
//! request. The admin API (`/admin/`) and the `router` CLI share them: one
//! validation, one answer shape.
//!
//! The wing knows no HTTP. A caller builds a typed input (the admin API
//! parses its body with [`from_json`], which refuses an unknown field
//! rather than dropping it; the CLI fills the struct from its flags), calls
//! one method of [`Operator`] and gets a view that serializes to the admin
//! API's JSON, or an [`OperatorError`] that converts to the `ApiError` the
//! admin API answers and the CLI prints.
//!
//! - `accounts.rs`: create, show, credit.
//! - `api_keys.rs`: issue, show (with spend), list, change, delete; the
//!   policy's rules (scopes, models of the catalog, networks, limits).
//! - `sessions.rs`: open and revoke a browser session.
//! - `sign_in.rs`: a person's magic link, its redemption into a session,
//!   the session a cookie names, sign-out.
//! - `data_protection.rs`: the account's zero-data-retention switch.
//! - `experiments.rs`: create, show, list, move through their statuses.
//! - `requests.rs`: one request's history, and its final status for the
//!   account that made it.
//! - `usage.rs`: an account's spend from the ledger (by day, model and
//!   key), each key's month and last use, the filtered request list.
//! - `videos.rs`: a video job as the operator sees it, and its
//!   reconciliation (through core's `Gateway`, which decides).
//! - `error.rs`: [`OperatorError`], [`Refusal`], [`Resource`].
//! - Rows: `router_store` (`accounts`, `api_keys`, `sessions`,
//!   `experiments`, `history`, `data_protection`).

pub mod accounts;
pub mod api_keys;
pub mod data_protection;
pub mod error;
pub mod experiments;
pub mod requests;
pub mod sessions;
pub mod sign_in;
pub mod usage;
pub mod videos;

pub use accounts::{Account, Balance, Credits, NewAccount, OpenedAccount};
pub use api_keys::{
    ApiKey, ApiKeyPatch, ApiKeyWithSpend, IssuedKey, KeySpend, NewApiKey, Policy, SpendLimitJson,
    WindowSpend,
};
pub use error::{OperatorError, Refusal, Resource, store_error};
pub use experiments::{ExperimentPatch, ExperimentView, NewExperiment, VariantJson, VariantView};
pub use requests::{RequestRecord, RequestStatus};
pub use sessions::{COOKIE_NAME, NewSession, OpenedSession};
pub use sign_in::{IssuedLink, SessionRecord, SignedInSession};

use router_store::Database;
use serde::de::DeserializeOwned;
use std::time::Duration;

/// The wing's state: the database and the default session lifetime. One
/// per process (the CLI makes one per command); the operations are its
/// methods, each in the module of its resource. Those that check names
/// against the catalog take the catalog in force.
#[derive(Debug, Clone)]
pub struct Operator {
    database: Database,
    session_ttl: Duration,
}

impl Operator {
    /// `session_ttl`: a session opened without `ttl_seconds` lasts this
    /// long (`ROUTER_SESSION_TTL_SECS`).
    pub fn new(database: Database, session_ttl: Duration) -> Self {
        Operator {
            database,
            session_ttl,
        }
    }
}

/// `value`, a JSON object, as `T`; a field that does not fit (missing,
/// unknown, of another type) is [`OperatorError::Body`] naming its path
/// (`body` for the whole, or for anything but an object).
pub fn from_json<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, OperatorError> {
    // Every input is an object: serde would also read a struct from an array
    // of its fields in order (`[null, null]`), which no caller means.
    if !value.is_object() {
        return Err(OperatorError::Body {
            param: "body".to_owned(),
            source: serde::de::Error::custom("expected a JSON object"),
        });
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        OperatorError::Body {
            param: if path == "." { "body".to_owned() } else { path },
            source: e.into_inner(),
        }
    })
}

/// A list answer: `{"object": "list", "data": [...]}`.
#[derive(Debug, Clone, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct List<T> {
    /// Always `list`.
    pub object: &'static str,
    pub data: Vec<T>,
}

impl<T> List<T> {
    fn of(data: Vec<T>) -> Self {
        List {
            object: "list",
            data,
        }
    }
}
