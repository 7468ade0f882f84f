//! Route selection: resolve the model, filter by protocol and capability,
//! order by priority then internal cost (requirements G-01, B-19, CF-01).

use crate::catalog::{Catalog, Model, Route};
use router_canonical::{ApiError, Capability, ErrorCode, Protocol, Request, Requirements};
use std::sync::Arc;

/// The eligible routes for one request, best first.
#[derive(Debug, Clone)]
pub struct Plan {
    pub model: Arc<Model>,
    pub routes: Vec<Arc<Route>>,
    pub requirements: Requirements,
}

/// Whether a route speaking `route_protocol` can carry a request that came
/// in as `inbound` with these requirements, without losing meaning.
fn protocol_compatible(inbound: Protocol, route_protocol: Protocol, req: &Requirements) -> bool {
    let inbound = if inbound == Protocol::Completions {
        Protocol::Chat
    } else {
        inbound
    };
    if req.native_only && route_protocol != inbound {
        return false;
    }
    // Messages caps temperature at 1 (CF-01): never clamp, route elsewhere.
    if req.temperature_above_one && route_protocol == Protocol::Messages {
        return false;
    }
    // A Responses route has no stop sequences (B-19).
    if req.needs(Capability::Stop) && route_protocol == Protocol::Responses {
        return false;
    }
    true
}

pub fn plan(catalog: &Catalog, request: &Request, inbound: Protocol) -> Result<Plan, ApiError> {
    let model = catalog
        .model(&request.model)
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::ModelNotFound,
                format!(
                    "The model `{}` does not exist or is not available.",
                    request.model
                ),
            )
            .with_param("model")
        })?
        .clone();
    let requirements = request.requirements();
    let configured: Vec<&Arc<Route>> = catalog
        .routes(&model.id)
        .iter()
        .filter(|r| protocol_compatible(inbound, r.protocol, &requirements))
        .filter(|r| r.capabilities.is_superset_of(requirements.capabilities))
        .collect();
    if configured.is_empty() {
        return Err(no_configured_route(&requirements));
    }
    let mut routes: Vec<Arc<Route>> = configured
        .into_iter()
        .filter(|r| r.enabled)
        .cloned()
        .collect();
    if routes.is_empty() {
        return Err(ApiError::new(
            ErrorCode::RouteUnavailable,
            "No route is currently available for this model.",
        ));
    }
    routes.sort_by(|a, b| {
        b.priority
            .cmp(&a.priority)
            .then(a.internal_cost_rank().cmp(&b.internal_cost_rank()))
    });
    Ok(Plan {
        model,
        routes,
        requirements,
    })
}

/// No configured route can ever serve this request: a client error naming
/// the feature (GP-43), not a transient 503.
fn no_configured_route(req: &Requirements) -> ApiError {
    let feature = Capability::ALL.into_iter().find(|c| req.needs(*c));
    match feature {
        Some(Capability::Stop) => ApiError::invalid(
            "stop",
            "This model has no route that supports stop sequences.",
        ),
        Some(Capability::Vision) => ApiError::new(
            ErrorCode::UnsupportedParameter,
            "This model does not accept image input.",
        )
        .with_param("messages"),
        Some(Capability::Tools) => {
            ApiError::invalid("tools", "This model has no route that supports tools.")
        }
        Some(Capability::Reasoning) => ApiError::invalid(
            "reasoning_effort",
            "This model has no route that supports reasoning effort.",
        ),
        Some(Capability::Thinking) => ApiError::invalid(
            "thinking",
            "This model has no route that supports thinking.",
        ),
        Some(Capability::ResponseFormat) => ApiError::invalid(
            "response_format",
            "This model has no route that supports structured output.",
        ),
        Some(Capability::Streaming) => {
            ApiError::invalid("stream", "This model has no route that supports streaming.")
        }
        None if req.temperature_above_one => ApiError::invalid(
            "temperature",
            "This model cannot take a temperature above 1.",
        ),
        None => ApiError::new(
            ErrorCode::UnsupportedConversion,
            "This request cannot be served losslessly by any route of this model.",
        ),
    }
}
