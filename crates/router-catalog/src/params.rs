//! How the wing reads a request's parameters: the edge decodes the query
//! string, the wing reads each value it needs in its own order, so the
//! first refusal is the same whatever else is wrong with the request.

use crate::CatalogError;

/// Decoded request parameters (a query string, for the HTTP edge).
pub trait Params {
    /// The single value of `name`: `Ok(None)` when absent, and
    /// [`CatalogError::UnreadableParam`] when it does not decode or is
    /// given twice (ambiguous).
    fn one(&self, name: &str) -> Result<Option<&str>, CatalogError>;

    /// The value of `name`, which must be given and not empty (`?model=`
    /// names nothing, like a missing `model`).
    fn required(&self, name: &'static str) -> Result<&str, CatalogError> {
        self.one(name)?
            .filter(|value| !value.is_empty())
            .ok_or(CatalogError::Required { param: name })
    }
}
