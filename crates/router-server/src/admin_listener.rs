//! `ROUTER_ADMIN_LISTEN`: the operator's routes on a listener of their own,
//! so the admin API is never reachable through the public port.
//!
//! Without it one listener serves every route ([`Listener::Both`]). With
//! it, the public listener no longer has `/admin/...` or `/metrics` (they
//! answer 404 as any unknown path), and the admin listener has only those
//! and the health checks. `/metrics` on the admin listener needs no token
//! unless `ROUTER_METRICS_TOKEN` is set (the listener's address is the
//! guard: bind it to a private interface).

use crate::routes::Route;

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

    /// Whether this listener serves `route`.
    pub fn serves(self, route: &Route) -> bool {
        match self {
            Listener::Both => true,
            Listener::Public => !is_operator_route(route.path),
            Listener::Admin => {
                is_operator_route(route.path) || matches!(route.path, "/healthz" | "/readyz")
            }
        }
    }
}

/// The operator's routes: the admin API and the metrics.
pub fn is_operator_route(path: &str) -> bool {
    path.starts_with("/admin/") || path == "/metrics"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routes::ROUTES;

    #[test]
    fn each_route_is_on_exactly_one_side_but_health_on_both() {
        for route in &ROUTES {
            assert!(Listener::Both.serves(route));
            let public = Listener::Public.serves(route);
            let admin = Listener::Admin.serves(route);
            if matches!(route.path, "/healthz" | "/readyz") {
                assert!(public && admin, "{}", route.path);
            } else {
                assert!(public != admin, "{}", route.path);
            }
            if route.path.starts_with("/admin/") || route.path == "/metrics" {
                assert!(admin && !public, "{}", route.path);
            }
        }
    }
}
