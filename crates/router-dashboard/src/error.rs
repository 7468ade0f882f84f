//! What a dashboard view answers when it does not succeed.

use router_canonical::ApiError;
use router_operator::OperatorError;

#[derive(Debug)]
pub enum DashboardError {
    /// The operator wing refused or failed (its own `ApiError`).
    Operator(OperatorError),
    /// A query parameter that is not what the endpoint reads: 400 naming it.
    Invalid {
        param: &'static str,
        message: String,
    },
}

impl From<OperatorError> for DashboardError {
    fn from(error: OperatorError) -> Self {
        DashboardError::Operator(error)
    }
}

impl std::fmt::Display for DashboardError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DashboardError::Operator(e) => e.fmt(f),
            DashboardError::Invalid { param, message } => write!(f, "`{param}`: {message}"),
        }
    }
}

impl std::error::Error for DashboardError {}

impl From<DashboardError> for ApiError {
    fn from(error: DashboardError) -> Self {
        match error {
            DashboardError::Operator(e) => ApiError::from(e),
            DashboardError::Invalid { param, message } => ApiError::invalid(param, message),
        }
    }
}
