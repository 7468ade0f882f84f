//! Browser sessions (`SessionAuth`): the slot the route guard calls.
//!
//! Sessions have not landed yet, so [`Session`] has no values and [`find`]
//! never finds one: every `Session` route answers 401 or 403 today, and the
//! compiler marks each place that must decide what a session may do
//! (`match session {}`). When sessions land, `Session` becomes a struct
//! (its account), `find` reads the cookie, and those places check the
//! origin: a mutation (any method but GET) needs the service's own origin,
//! else 403 `cross_origin_forbidden` (A-16, GP-36). A session is never a
//! credential on an `ApiKey` route: the guard does not call `find`
//! there.

use crate::app::App;

/// The cookie a browser session will ride on (`sessionCookie` in the
/// OpenAPI document); nothing reads it until sessions land.
pub const COOKIE: &str = "router_session";

/// A signed-in browser session. None exist yet.
#[derive(Debug)]
pub enum Session {}

/// The request's session, if it carries a valid one. Always `None` today.
pub fn find(_app: &App, _headers: &http::HeaderMap) -> Option<Session> {
    None
}
