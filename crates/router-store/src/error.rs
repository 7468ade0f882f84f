//! How database, pool and migration failures become core's `StoreError`, and
//! the typed errors of the admin operations.

use diesel::result::{DatabaseErrorKind, Error as DieselError};
use router_core::store::StoreError;
use uuid::Uuid;

/// A diesel failure as core sees it: a lost connection (or a server that is
/// shutting down or starting) means the database is unavailable, answered
/// as a retryable 503; anything else is a failed query.
pub(crate) fn store_error(error: DieselError) -> StoreError {
    match &error {
        DieselError::DatabaseError(
            DatabaseErrorKind::ClosedConnection | DatabaseErrorKind::UnableToSendCommand,
            _,
        )
        | DieselError::BrokenTransactionManager => StoreError::Unavailable(error.to_string()),
        DieselError::DatabaseError(DatabaseErrorKind::Unknown, info)
            if is_server_going_away(info.message()) =>
        {
            StoreError::Unavailable(error.to_string())
        }
        _ => StoreError::Query(error.to_string()),
    }
}

/// The messages of SQLSTATE 57P01-57P03 and 53300 (diesel keeps no code):
/// the server is going down, starting or full, not the query at fault.
fn is_server_going_away(message: &str) -> bool {
    [
        "terminating connection",
        "the database system is",
        "sorry, too many clients",
        "canceling statement due to lock timeout",
    ]
    .iter()
    .any(|start| message.starts_with(start))
}

/// Checking a connection out of the pool failed: timeout, refused connection
/// or a closed pool. The database is unavailable either way.
pub(crate) fn pool_error(
    error: diesel_async::pooled_connection::deadpool::PoolError,
) -> StoreError {
    StoreError::Unavailable(error.to_string())
}

/// A value that does not fit its column (e.g. a `u64` token count above
/// `i64::MAX`). Never expected in practice; reported instead of wrapped.
pub(crate) fn out_of_range(what: &'static str) -> StoreError {
    StoreError::Query(format!("{what} does not fit in a BIGINT column"))
}

/// Failures of the operator's admin operations.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdminError {
    #[error("account {0} not found")]
    AccountNotFound(Uuid),
    #[error("API key {0} not found (or already deleted)")]
    ApiKeyNotFound(Uuid),
    #[error("an account with this email already exists")]
    EmailTaken,
    /// The account already has a resource with this name (an experiment slug).
    #[error("the name is already taken in this account")]
    Conflict,
    /// Grants move money into a wallet; a non-positive grant is a mistake.
    #[error("amount must be positive, got {0} nano-USD")]
    NonPositiveAmount(i64),
    /// The grant would take the balance past what a wallet holds (i64 nano-USD).
    #[error("the balance would exceed the largest a wallet holds")]
    BalanceTooLarge,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<DieselError> for AdminError {
    fn from(error: DieselError) -> Self {
        AdminError::Store(store_error(error))
    }
}

/// Whether a diesel error is a unique violation of the named constraint.
pub(crate) fn is_unique_violation(error: &DieselError, constraint: &str) -> bool {
    matches!(
        error,
        DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, info)
            if info.constraint_name() == Some(constraint)
    )
}

/// Whether a diesel error is a foreign-key violation of the named constraint.
pub(crate) fn is_foreign_key_violation(error: &DieselError, constraint: &str) -> bool {
    matches!(
        error,
        DieselError::DatabaseError(DatabaseErrorKind::ForeignKeyViolation, info)
            if info.constraint_name() == Some(constraint)
    )
}
