//! Every public outcome of the catalog's operations that is not a success,
//! and the `ApiError` each is answered with (the code gives the status).

use crate::changes::MAX_LIMIT;
use router_canonical::{ApiError, ErrorCode};
use router_core::product_codes;
use router_core::store::StoreError;

/// Why a catalog operation did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// A reload cannot read the catalog file: 400 naming it.
    #[error("cannot read catalog {path}: {source}")]
    Unreadable {
        path: String,
        source: std::io::Error,
    },
    /// A reload's catalog file does not load: 400 naming the file, the
    /// line and the field.
    #[error(transparent)]
    Invalid(#[from] router_core::catalog::CatalogError),
    /// A reload's release could not be recorded: 500, and the old catalog
    /// keeps serving.
    #[error("the catalog release could not be recorded: {0}")]
    NotRecorded(StoreError),
    /// The pricing feed's rows or its cursor key could not be read: 500.
    #[error("pricing changes are unavailable: {0}")]
    ChangesUnavailable(StoreError),
    /// No randomness for a new cursor key: 500, like a store failure.
    #[error("no randomness for a cursor key")]
    NoRandomness,
    /// A query parameter does not decode or is given twice: 400.
    #[error("`{param}` cannot be read")]
    UnreadableParam { param: String },
    /// A required query parameter is missing: 400.
    #[error("`{param}` is required")]
    Required { param: &'static str },
    /// `since` is not RFC 3339 with an offset (L-21): 400.
    #[error("`since` is not an RFC 3339 timestamp with a timezone")]
    Since,
    /// `limit` is not an integer from 1 to 100 (L-22): 400.
    #[error("`limit` is out of range")]
    Limit,
    /// The cursor is not one this deployment signed for this query,
    /// credential and key policy (L-23, L-24): 400.
    #[error("not a cursor of this query, credential and key policy")]
    Cursor,
    /// `min_discount_percent` is not a number from 0 to 99.99: 400.
    #[error("`min_discount_percent` is out of range")]
    MinDiscount,
    /// `zdr` is neither `true` nor `false`: 400.
    #[error("`zdr` is not a boolean")]
    ZdrFlag,
    /// `models` has an empty entry: 400.
    #[error("`models` has an empty entry")]
    EmptyModelName,
    /// `models` names more distinct models than a comparison takes: 400.
    #[error("`models` names more than {max} models")]
    TooManyModels { max: usize },
    /// A count is not an integer from `min` to `max`: 400.
    #[error("`{param}` is not an integer from {min} to {max}")]
    Count {
        param: &'static str,
        min: u64,
        max: u64,
    },
    /// An estimate's total is beyond nano-USD's range: 400 on `requests`.
    #[error("the total is beyond the range of nano-USD")]
    TotalOutOfRange,
    /// The model is unknown or hidden (L-08, GP-30): 404.
    #[error("no model `{name}`")]
    ModelNotFound { name: String },
    /// The key's model policy excludes the model: 403.
    #[error("the key may not use `{name}`")]
    ModelNotAllowed { name: String },
    /// A minimum discount for a model without a list price: 400.
    #[error("the model's list price is unknown")]
    ListPriceUnknown,
    /// No public model by that name (L-34..L-36): 404.
    #[error("no such public model")]
    PublicModelNotFound,
}

impl From<CatalogError> for ApiError {
    fn from(error: CatalogError) -> Self {
        match error {
            CatalogError::Unreadable { .. } | CatalogError::Invalid(_) => {
                ApiError::new(ErrorCode::InvalidParameter, error.to_string())
            }
            CatalogError::NotRecorded(e @ StoreError::Unavailable(_))
            | CatalogError::ChangesUnavailable(e @ StoreError::Unavailable(_)) => e.api_error(),
            CatalogError::NotRecorded(_) => ApiError::new(
                ErrorCode::InternalError,
                "The catalog release could not be recorded; the old catalog keeps serving.",
            ),
            CatalogError::ChangesUnavailable(_) | CatalogError::NoRandomness => ApiError::new(
                ErrorCode::InternalError,
                "Pricing changes are temporarily unavailable.",
            ),
            CatalogError::UnreadableParam { param } => {
                let message = format!("`{param}` cannot be read.");
                ApiError::invalid(param, message)
            }
            CatalogError::Required { param } => {
                ApiError::invalid(param, format!("`{param}` is required."))
            }
            CatalogError::Since => ApiError::invalid(
                "since",
                "`since` must be an RFC 3339 timestamp with a timezone, e.g. 2025-01-01T00:00:00Z.",
            ),
            CatalogError::Limit => ApiError::invalid(
                "limit",
                format!("`limit` must be an integer from 1 to {MAX_LIMIT}."),
            ),
            CatalogError::Cursor => ApiError::invalid(
                "cursor",
                "`cursor` is not a cursor of this query, credential and key policy.",
            ),
            CatalogError::MinDiscount => ApiError::invalid(
                "min_discount_percent",
                "`min_discount_percent` must be a number from 0 to 99.99.",
            ),
            CatalogError::ZdrFlag => ApiError::invalid("zdr", "`zdr` must be `true` or `false`."),
            CatalogError::EmptyModelName => {
                ApiError::invalid("models", "`models` has an empty entry.")
            }
            CatalogError::TooManyModels { max } => ApiError::invalid(
                "models",
                format!("`models` names at most {max} distinct models."),
            ),
            CatalogError::Count { param, min, max } => ApiError::invalid(
                param,
                format!("`{param}` must be an integer from {min} to {max}."),
            ),
            CatalogError::TotalOutOfRange => ApiError::invalid(
                "requests",
                "The total is beyond the supported range of nano-USD.",
            ),
            CatalogError::ModelNotFound { name } => ApiError::new(
                ErrorCode::ModelNotFound,
                format!("The model `{name}` does not exist or is not available."),
            )
            .with_param("model"),
            CatalogError::ModelNotAllowed { name } => ApiError::new(
                product_codes::MODEL_NOT_ALLOWED,
                format!("This API key may not use the model `{name}`."),
            )
            .with_param("model"),
            CatalogError::ListPriceUnknown => ApiError::new(
                product_codes::LIST_PRICE_UNKNOWN,
                "This model's official list price is unknown, so a minimum discount cannot be verified.",
            )
            .with_param("min_discount_percent"),
            CatalogError::PublicModelNotFound => {
                ApiError::new(ErrorCode::NotFound, "No such model is available.")
            }
        }
    }
}
