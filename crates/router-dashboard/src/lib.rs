//! The account dashboard: the web page a person opens at `/` and
//! `/account/...` to sign in by magic link and see what their account spent,
//! manage its API keys, its data protection and its digests.
//!
//! The wing knows no HTTP server (the router's `dashboard.rs` is its thin
//! HTTP side) and adds no business rule of its own: its views call the
//! operator wing (keys, usage from the ledger, requests) and format what
//! they answer for a person (USD from integer nano-USD, without floats).
//!
//! - `pages.rs`: which paths are pages, the HTML shell, the sign-in pages,
//!   and the embedded assets (`web/`: plain HTML, CSS and a small
//!   dependency-free set of JavaScript modules; no build step).
//! - `keys.rs`: the owner's keys (`/api/keys`): list with spend this month
//!   and last use, create, change, revoke; another account's key is
//!   unknown.
//! - `usage.rs`: balance and credit, spend by day, model and key
//!   (`/api/usage`), the request list with its filters and one request's
//!   detail without any supplier identity (`/api/requests`).
//! - `sign_in.rs`: the sign-in link sent by email (issued by the operator
//!   wing, mailed by the notifications wing), and the sign-in answers.
//! - `money.rs`: nano-USD as USD text.
//! - `error.rs`: [`DashboardError`] and its `ApiError`.

pub mod error;
pub mod keys;
pub mod money;
pub mod pages;
pub mod sign_in;
pub mod usage;

pub use error::DashboardError;
pub use money::Money;

use router_operator::Operator;

/// The dashboard's views over the operator wing, for one call.
#[derive(Debug, Clone, Copy)]
pub struct Dashboard<'a> {
    operator: &'a Operator,
}

impl<'a> Dashboard<'a> {
    pub fn new(operator: &'a Operator) -> Self {
        Dashboard { operator }
    }
}
