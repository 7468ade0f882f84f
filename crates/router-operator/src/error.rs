//! What an operation answers when it does not succeed, and the `ApiError`
//! each answer becomes (`From<OperatorError> for ApiError`): the admin API
//! renders it in its envelope, the CLI prints its code, field and message.

use router_canonical::{ApiError, ErrorCode};
use router_core::ExperimentStatus;
use router_store::AdminError;

/// Why an operation did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// The database failed, or answered what the operation never expects:
    /// 500 without details (the cause is logged when it is rendered).
    #[error(transparent)]
    Store(AdminError),
    /// No such resource: 404.
    #[error("no such {0}")]
    NotFound(Resource),
    /// The body is not the operation's input (a field missing, unknown or
    /// of another type): 400 naming the field's path, `body` for the whole.
    #[error("`{param}`: {source}")]
    Body {
        param: String,
        source: serde_json::Error,
    },
    /// The input breaks a rule: 400 naming the field, or 409 for a
    /// conflict with what exists.
    #[error(transparent)]
    Refused(#[from] Refusal),
}

impl OperatorError {
    pub(crate) fn store(error: impl Into<AdminError>) -> OperatorError {
        OperatorError::Store(error.into())
    }
}

/// What the operator can ask for that may not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    Account,
    ApiKey,
    Request,
    Session,
    Experiment,
}

impl std::fmt::Display for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Resource::Account => "account",
            Resource::ApiKey => "API key",
            Resource::Request => "request",
            Resource::Session => "session",
            Resource::Experiment => "experiment",
        })
    }
}

/// An input the rules refuse; each becomes one client error naming its
/// field (an index is the entry's position in its array).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("an account with this email exists")]
    EmailTaken,
    /// Not one email address (sign-in links and digests go to it).
    #[error("not an email address")]
    InvalidEmail,
    #[error("a credit that is not positive")]
    NonPositiveAmount,
    /// A credit that would take the balance past i64 nano-USD.
    #[error("the balance would exceed i64 nano-USD")]
    BalanceTooLarge,
    /// An `expires_at` past 9999-12-31T23:59:59Z, beyond the clock's range.
    #[error("expires_at beyond {max}")]
    ExpiresTooLate { max: u64 },
    #[error("spend_limits[{index}] lasts no second")]
    EmptySpendWindow { index: usize },
    /// A limit beyond the store's bigint.
    #[error("`{field}` is too large")]
    TooLarge { field: &'static str },
    #[error("scopes[{index}]: unknown scope `{name}`")]
    UnknownScope { index: usize, name: String },
    /// An allowed model the catalog does not have, by ID or alias.
    #[error("allowed_models[{index}]: no model `{name}`")]
    UnknownModel { index: usize, name: String },
    #[error("ip_allowlist[{index}]: `{entry}` is no network")]
    NotANetwork { index: usize, entry: String },
    #[error("response_cache_ttl_seconds outside 1 to {max}")]
    ResponseCacheTtl { max: i32 },
    #[error("`{0}` is no prompt-cache mode")]
    PromptCacheMode(String),
    /// A data-protection change that is not exactly
    /// `{"zero_data_retention": <bool>}` (J-04, GP-37).
    #[error("not exactly {{\"zero_data_retention\": true|false}}")]
    DataProtectionBody,
    /// A new key's `account_id` names no account (the body's field, so 400).
    #[error("account_id names no account")]
    NoSuchAccountId,
    #[error("ttl_seconds outside 1 to {max}")]
    SessionTtl { max: u64 },
    #[error("not 1 to {max} variants")]
    VariantCount { max: usize },
    #[error("variants[{index}]: a name of 1 to 64 characters")]
    VariantName { index: usize },
    #[error("variants[{index}]: a second variant named `{name}`")]
    DuplicateVariant { index: usize, name: String },
    #[error("variants[{index}]: a weight outside 1 to 10000")]
    VariantWeight { index: usize },
    #[error("variants[{index}]: a system instruction over {max} characters")]
    SystemTooLong { index: usize, max: usize },
    #[error("variants[{index}]: system_mode without system")]
    SystemModeWithoutSystem { index: usize },
    /// A variant's model that is no text model of the catalog.
    #[error("variants[{index}]: no text model `{model}`")]
    VariantModel { index: usize, model: String },
    #[error("not a slug")]
    Slug,
    #[error("the account has an experiment with this slug")]
    SlugTaken,
    #[error("not a status an experiment moves to")]
    Status,
    #[error("promoting without a winner")]
    WinnerMissing,
    #[error("a winner without promoting")]
    WinnerNotPromoting,
    #[error("no variant named `{0}`")]
    NoSuchWinner(String),
    /// The experiment's status does not lead to the one asked for.
    #[error("{} cannot become {}", from.as_str(), to.as_str())]
    Transition {
        from: ExperimentStatus,
        to: ExperimentStatus,
    },
}

/// The 500 of a storage failure, logged; its text never reaches a client.
pub fn store_error(e: impl std::fmt::Display) -> ApiError {
    tracing::error!(error = %e, "admin storage failure");
    ApiError::new(ErrorCode::InternalError, "Storage failure.")
}

impl From<OperatorError> for ApiError {
    fn from(error: OperatorError) -> ApiError {
        match error {
            OperatorError::Store(router_store::AdminError::Store(e)) => e.api_error(),
            OperatorError::Store(e) => store_error(e),
            OperatorError::NotFound(resource) => {
                ApiError::new(ErrorCode::NotFound, format!("No such {resource}."))
            }
            OperatorError::Body { param, source } => ApiError::invalid(param, source.to_string()),
            OperatorError::Refused(refusal) => refusal.into(),
        }
    }
}

impl From<Refusal> for ApiError {
    fn from(refusal: Refusal) -> ApiError {
        let variant = |index: usize, field: &str| format!("variants[{index}].{field}");
        match refusal {
            Refusal::EmailTaken => ApiError::new(
                ErrorCode::Conflict,
                "An account with this email already exists.",
            )
            .with_param("email"),
            Refusal::InvalidEmail => ApiError::invalid(
                "email",
                "`email` must be one email address (local@domain.example, at most 254 characters).",
            ),
            Refusal::NonPositiveAmount => ApiError::invalid(
                "amount_nano_usd",
                "The amount must be a positive integer of nano-USD.",
            ),
            Refusal::EmptySpendWindow { index } => ApiError::invalid(
                format!("spend_limits[{index}].window_seconds"),
                "A spend window lasts at least one second.",
            ),
            Refusal::BalanceTooLarge => ApiError::invalid(
                "amount_nano_usd",
                "The balance would exceed 9223372036854775807 nano-USD.",
            ),
            Refusal::ExpiresTooLate { max } => ApiError::invalid(
                "expires_at",
                format!("`expires_at` is Unix seconds up to {max}."),
            ),
            Refusal::TooLarge { field } => {
                ApiError::invalid(field, format!("`{field}` is too large."))
            }
            Refusal::UnknownScope { index, name } => ApiError::invalid(
                format!("scopes[{index}]"),
                format!("Unknown scope `{name}`."),
            ),
            Refusal::UnknownModel { index, name } => ApiError::invalid(
                format!("allowed_models[{index}]"),
                format!("No model or alias `{name}` in the catalog."),
            ),
            Refusal::NotANetwork { index, entry } => ApiError::invalid(
                format!("ip_allowlist[{index}]"),
                format!("`{entry}` is not an IP address or CIDR network."),
            ),
            Refusal::ResponseCacheTtl { max } => ApiError::invalid(
                "response_cache_ttl_seconds",
                format!("`response_cache_ttl_seconds` is from 1 to {max}."),
            ),
            Refusal::PromptCacheMode(text) => ApiError::invalid(
                "prompt_cache_mode",
                format!("`{text}` is not one of `on`, `off`, `passthrough`."),
            ),
            Refusal::NoSuchAccountId => ApiError::invalid("account_id", "No such account."),
            Refusal::DataProtectionBody => ApiError::new(
                router_core::product_codes::INVALID_DATA_PROTECTION,
                "The body must be exactly {\"zero_data_retention\": true|false}.",
            )
            .with_param("zero_data_retention"),
            Refusal::SessionTtl { max } => ApiError::invalid(
                "ttl_seconds",
                format!("ttl_seconds must be between 1 and {max}."),
            ),
            Refusal::VariantCount { max } => ApiError::invalid(
                "variants",
                format!("An experiment has 1 to {max} variants."),
            ),
            Refusal::VariantName { index } => {
                ApiError::invalid(variant(index, "name"), "A name has 1 to 64 characters.")
            }
            Refusal::DuplicateVariant { index, name } => ApiError::invalid(
                variant(index, "name"),
                format!("Two variants are named `{name}`."),
            ),
            Refusal::VariantWeight { index } => ApiError::invalid(
                variant(index, "weight"),
                "A weight is an integer from 1 to 10000.",
            ),
            Refusal::SystemTooLong { index, max } => ApiError::invalid(
                variant(index, "system"),
                format!("A system instruction has at most {max} characters."),
            ),
            Refusal::SystemModeWithoutSystem { index } => ApiError::invalid(
                variant(index, "system_mode"),
                "`system_mode` needs a `system` instruction.",
            ),
            Refusal::VariantModel { index, model } => ApiError::invalid(
                variant(index, "model"),
                format!("No text model or alias `{model}` in the catalog."),
            ),
            Refusal::Slug => ApiError::invalid(
                "slug",
                "A slug has 1 to 64 letters, digits, `.`, `_` or `-`.",
            ),
            Refusal::SlugTaken => ApiError::new(
                ErrorCode::Conflict,
                "This account already has an experiment with this slug.",
            )
            .with_param("slug"),
            Refusal::Status => ApiError::invalid(
                "status",
                "`status` is one of running, paused, completed, promoted.",
            ),
            Refusal::WinnerMissing => {
                ApiError::invalid("winner", "Promoting needs the `winner` variant's name.")
            }
            Refusal::WinnerNotPromoting => {
                ApiError::invalid("winner", "`winner` is given only when promoting.")
            }
            Refusal::NoSuchWinner(winner) => {
                ApiError::invalid("winner", format!("No variant is named `{winner}`."))
            }
            Refusal::Transition { from, to } => ApiError::new(
                ErrorCode::Conflict,
                format!(
                    "An experiment that is {} cannot become {}.",
                    from.as_str(),
                    to.as_str()
                ),
            )
            .with_param("status"),
        }
    }
}
