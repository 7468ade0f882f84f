//! The router's OpenAPI 3.1 document, built from what each endpoint says
//! of itself.
//!
//! Two halves, neither of which knows HTTP serving or a handler:
//! - [`operation`]: an endpoint's description as constant data (summary,
//!   query and header parameters, body, replies with their headers, the
//!   errors its handler can answer) and the component schemas it names,
//!   taken from the types' `ToSchema` ([`Schemas`]);
//! - [`document`]: the document assembled from a list of [`Endpoint`]s, each
//!   adding what its route's rules imply (security, path parameters, the
//!   guard's errors in its error envelope, the headers every answer carries).
//!
//! The server's route table implements [`Endpoint`] for its rows, so the
//! document served at `/openapi.json` is generated from the same rows that
//! route and guard requests.

pub mod document;
pub mod operation;

pub use document::{Endpoint, Info, build, operation_id, path_parameters};
pub use operation::{Operation, Schemas};
