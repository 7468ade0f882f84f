//! `ROUTER_ADMIN_LISTEN`: the operator's routes on a listener of their own,
//! so the admin API is never reachable through the public port.
//!
//! Without it one listener serves every route ([`Listener::Both`]). With
//! it, the public listener no longer has `/admin/...` or `/metrics` (they
//! answer 404 as any unknown path), and the admin listener has only those
//! and the health checks. `/metrics` on the admin listener needs no token
//! unless `ROUTER_METRICS_TOKEN` is set (the listener's address is the
//! guard: bind it to a private interface).

/// Which routes a listener serves; rides on each request as an extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listener {
    /// Every route (no `ROUTER_ADMIN_LISTEN`).
    Both,
    /// `ROUTER_LISTEN` when an admin listener exists: all but the operator's routes.
    Public,
    /// `ROUTER_ADMIN_LISTEN`: the operator's routes and the health checks.
    Admin,
}

impl Listener {
    /// The listener a request came in on (`Both` when none was recorded).
    pub fn of(extensions: &http::Extensions) -> Listener {
        extensions
            .get::<Listener>()
            .copied()
            .unwrap_or(Listener::Both)
    }

    /// Whether this listener serves the route of pattern `path`.
    pub fn serves(self, path: &str) -> bool {
        match self {
            Listener::Both => true,
            Listener::Public => !is_operator_route(path),
            Listener::Admin => is_operator_route(path) || matches!(path, "/healthz" | "/readyz"),
        }
    }
}

/// The operator's routes: the admin API and the metrics.
pub fn is_operator_route(path: &str) -> bool {
    path.starts_with("/admin/") || path == "/metrics"
}
