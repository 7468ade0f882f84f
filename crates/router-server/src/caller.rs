//! Who a route's guard let through (`dispatch::guard`), as the handlers
//! receive it. The rules of each kind of caller are `dispatch.rs`'s.

use crate::session::Session;
use router_core::store::ApiKeyRecord;

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
