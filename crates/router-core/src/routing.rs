//! Route selection: resolve the model, filter by protocol and capability,
//! order by priority then internal cost (requirements G-01, B-19, CF-01).

use crate::catalog::{Catalog, Model, Route};
use crate::product_codes;
use crate::routing_options::RoutingOptions;
use router_canonical::{ApiError, Capability, ErrorCode, Field, Protocol, Request, Requirements};
use std::sync::Arc;

/// The eligible routes for one request, best first.
#[derive(Debug, Clone)]
pub struct Plan {
    pub model: Arc<Model>,
    pub routes: Vec<Arc<Route>>,
    pub requirements: Requirements,
}

/// Whether a route of `protocol` takes a temperature above 1: a Messages
/// body (Anthropic's, or Claude's on Bedrock) caps it at 1 (CF-01).
fn carries_temperature_above_one(protocol: Protocol) -> bool {
    !protocol.is_messages_body()
}

/// Whether a route of `protocol` takes frequency and presence penalties.
fn carries_penalties(protocol: Protocol) -> bool {
    !protocol.is_messages_body() && protocol != Protocol::BedrockConverse
}

/// Whether a route speaking `route_protocol` can carry a request that came
/// in as `inbound` with these requirements, without losing meaning.
fn protocol_compatible(inbound: Protocol, route_protocol: Protocol, req: &Requirements) -> bool {
    // Image and video routes generate media; they never carry text inference.
    if route_protocol.is_media() {
        return false;
    }
    if req.native_only && route_protocol != inbound.rides() {
        return false;
    }
    // Messages caps temperature at 1 (CF-01): never clamp, route elsewhere.
    if req.temperature_above_one && !carries_temperature_above_one(route_protocol) {
        return false;
    }
    // Nor does it have penalties: dropping them would change the output.
    if req.penalties && !carries_penalties(route_protocol) {
        return false;
    }
    // A Responses route has no stop sequences (B-19).
    if req.needs(Capability::Stop) && route_protocol == Protocol::Responses {
        return false;
    }
    true
}

/// The one route a single-attempt protocol (image generation, video
/// creation) uses for `model_id`: enabled, speaking `protocol`, `zdr` when
/// zero data retention is asked (503 `zdr_capacity_unavailable` when the
/// model has none), then the highest priority and the lowest internal cost
/// (503 `route_unavailable` when none is left).
pub fn single_route(
    catalog: &Catalog,
    model_id: &str,
    protocol: Protocol,
    zdr: bool,
) -> Result<Arc<Route>, ApiError> {
    let routes = catalog
        .routes(model_id)
        .iter()
        .filter(|r| r.protocol == protocol);
    if zdr && !routes.clone().any(|r| r.enabled && r.zdr) {
        return Err(ApiError::new(
            product_codes::ZDR_CAPACITY_UNAVAILABLE,
            "No verified zero-data-retention route is available for this model.",
        ));
    }
    routes
        .filter(|r| r.enabled && (r.zdr || !zdr))
        .min_by(|a, b| {
            b.priority
                .cmp(&a.priority)
                .then(a.internal_cost_rank().cmp(&b.internal_cost_rank()))
        })
        .cloned()
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::RouteUnavailable,
                "No route is currently available for this model.",
            )
        })
}

/// The catalog model `name` (an ID or alias), or the public 404 every
/// endpoint answers for an unknown or hidden one.
pub fn find_model(catalog: &Catalog, name: &str) -> Result<Arc<Model>, ApiError> {
    catalog.model(name).cloned().ok_or_else(|| {
        ApiError::new(
            ErrorCode::ModelNotFound,
            format!("The model `{name}` does not exist or is not available."),
        )
        .with_param("model")
    })
}

/// The routes that may serve `request` arriving over `inbound`, under the
/// gateway's `options` (`zdr`, `min_discount_percent`).
pub fn plan(
    catalog: &Catalog,
    request: &Request,
    options: RoutingOptions,
    inbound: Protocol,
) -> Result<Plan, ApiError> {
    let model = find_model(catalog, &request.model)?;
    if model.modality != crate::catalog::Modality::Text {
        return Err(ApiError::invalid(
            "model",
            format!(
                "The model `{}` generates media, not text; it is served by its own endpoint.",
                request.model
            ),
        ));
    }
    let requirements = request.requirements();
    let configured: Vec<&Arc<Route>> = catalog
        .routes(&model.id)
        .iter()
        .filter(|r| protocol_compatible(inbound, r.protocol, &requirements))
        .filter(|r| r.capabilities.is_superset_of(requirements.capabilities))
        .collect();
    if configured.is_empty() {
        return Err(no_configured_route(
            request,
            inbound,
            &model,
            catalog.routes(&model.id),
            &requirements,
        ));
    }
    let configured = allow_betas(configured, request)?;
    let configured = apply_routing_options(&model, configured, options)?;
    let mut routes: Vec<Arc<Route>> = configured
        .into_iter()
        .filter(|r| r.enabled)
        .cloned()
        .collect();
    if routes.is_empty() {
        // Image input never falls back to text-only supply (H-05, H-08).
        if requirements.needs(Capability::Vision) {
            return Err(ApiError::new(
                product_codes::IMAGE_CAPACITY_UNAVAILABLE,
                "No vision route is currently available for this model.",
            ));
        }
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

/// `zdr` and `min_discount_percent` (F-21..F-27): filter, never relax.
fn apply_routing_options<'a>(
    model: &Model,
    routes: Vec<&'a Arc<Route>>,
    options: RoutingOptions,
) -> Result<Vec<&'a Arc<Route>>, ApiError> {
    let routes: Vec<&Arc<Route>> = if options.zdr {
        routes.into_iter().filter(|r| r.zdr).collect()
    } else {
        routes
    };
    if routes.is_empty() {
        return Err(ApiError::new(
            product_codes::ZDR_CAPACITY_UNAVAILABLE,
            "No verified zero-data-retention route is available for this model.",
        ));
    }
    let Some(floor) = options.min_discount else {
        return Ok(routes);
    };
    let list = model.list_price.as_ref().ok_or_else(|| {
        ApiError::new(product_codes::LIST_PRICE_UNKNOWN, "This model's official list price is unknown, so a minimum discount cannot be verified.")
            .with_param("min_discount_percent")
    })?;
    let routes: Vec<&Arc<Route>> = routes
        .into_iter()
        .filter(|r| {
            crate::pricing::customer_rates(model, r).is_some_and(|rates| {
                floor.is_met(list.input.0, rates.input.0)
                    && floor.is_met(list.output.0, rates.output.0)
            })
        })
        .collect();
    if routes.is_empty() {
        return Err(ApiError::new(
            product_codes::MIN_DISCOUNT_UNAVAILABLE,
            "No supply meets the requested minimum discount.",
        ));
    }
    Ok(routes)
}

/// Beta identifiers (D-04, GP-32): every one must be on the route's
/// allowlist; unknown and disallowed identifiers are both a 400.
fn allow_betas<'a>(
    routes: Vec<&'a Arc<Route>>,
    request: &Request,
) -> Result<Vec<&'a Arc<Route>>, ApiError> {
    let betas = request
        .native
        .as_ref()
        .map_or(&[][..], |n| n.betas.as_slice());
    if betas.is_empty() {
        return Ok(routes);
    }
    let Some(closest) = routes
        .iter()
        .max_by_key(|r| betas.iter().filter(|b| r.betas.contains(b)).count())
        .copied()
    else {
        return Ok(routes);
    };
    // Name only what the closest route refuses, not every identifier sent
    // (a coding agent sends several, most of them allowed).
    let refused: Vec<&str> = betas
        .iter()
        .filter(|b| !closest.betas.contains(b))
        .map(String::as_str)
        .collect();
    let routes: Vec<&Arc<Route>> = routes
        .into_iter()
        .filter(|r| r.allows_betas(betas))
        .collect();
    if routes.is_empty() {
        return Err(ApiError::invalid(
            "anthropic-beta",
            format!(
                "No route of this model accepts the beta feature(s) `{}`. The router's operator allows an identifier by listing it in the `betas` of the model's native Messages route in the catalog.",
                refused.join(",")
            ),
        ));
    }
    Ok(routes)
}

/// No configured route can ever serve this request: a client error naming
/// the feature (GP-43), not a transient 503.
fn no_configured_route(
    request: &Request,
    inbound: Protocol,
    model: &Model,
    model_routes: &[Arc<Route>],
    req: &Requirements,
) -> ApiError {
    // A request only its own protocol can carry, for a model with no route
    // of that protocol: never downgraded (GP-53, CF-05, D-26).
    if let Some(param) = &request.native_only
        && !model_routes.iter().any(|r| r.protocol == inbound)
    {
        return ApiError::invalid(
            param.clone(),
            format!(
                "`{param}` needs a native route speaking the `{inbound}` protocol, and the model `{}` has none: it cannot be converted without changing its meaning. Choose a model whose `protocols` (GET /v1/models) include `{inbound}`.",
                request.model
            ),
        );
    }
    // Blame the first requirement that no route the request could otherwise
    // use can meet: a streamed request with temperature 1.5 for a model
    // whose only route speaks Messages is refused for its temperature, not
    // for streaming, which that route supports.
    let candidates: Vec<&Arc<Route>> = model_routes
        .iter()
        .filter(|r| !req.native_only || r.protocol == inbound.rides())
        .collect();
    let unmet = |carries: &dyn Fn(&Route) -> bool| !candidates.iter().any(|r| carries(r));
    let feature = Capability::ALL.into_iter().find(|c| {
        req.needs(*c)
            && unmet(&|r: &Route| {
                r.capabilities.contains(*c)
                    && !(*c == Capability::Stop && r.protocol == Protocol::Responses)
            })
    });
    let temperature =
        req.temperature_above_one && unmet(&|r: &Route| carries_temperature_above_one(r.protocol));
    let penalties = req.penalties && unmet(&|r: &Route| carries_penalties(r.protocol));
    let refuse =
        |field, message: &str| ApiError::for_field(ErrorCode::InvalidParameter, field, message);
    match feature {
        Some(Capability::Stop) => refuse(
            Field::StopSequences,
            "This model has no route that supports stop sequences.",
        ),
        // A model that accepts images publicly but has no vision supply in
        // this catalog is out of capacity, not wrongly asked (H-08).
        Some(Capability::Vision) if model.image_input => ApiError::new(
            product_codes::IMAGE_CAPACITY_UNAVAILABLE,
            "No vision route is currently available for this model.",
        ),
        Some(Capability::Vision) => ApiError::for_field(
            ErrorCode::UnsupportedParameter,
            Field::ImageInput,
            "This model does not accept image input.",
        ),
        Some(Capability::Tools) => {
            refuse(Field::Tools, "This model has no route that supports tools.")
        }
        Some(Capability::Reasoning) => refuse(
            Field::ReasoningEffort,
            "This model has no route that supports reasoning effort.",
        ),
        Some(Capability::Thinking) => refuse(
            Field::Thinking,
            "This model has no route that supports thinking.",
        ),
        Some(Capability::ResponseFormat) => refuse(
            Field::ResponseFormat,
            "This model has no route that supports structured output.",
        ),
        Some(Capability::Streaming) => refuse(
            Field::Stream,
            "This model has no route that supports streaming.",
        ),
        None if temperature => refuse(
            Field::Temperature,
            "This model cannot take a temperature above 1.",
        ),
        // No request demands prompt caching of a route today: the cache
        // headers steer affinity, never eligibility.
        Some(Capability::PromptCache) => ApiError::new(
            ErrorCode::UnsupportedConversion,
            "This model has no route that honours prompt caching.",
        ),
        None if penalties => refuse(
            Field::Penalties,
            "This model has no route that supports frequency or presence penalties.",
        ),
        None => ApiError::new(
            ErrorCode::UnsupportedConversion,
            "This request cannot be served losslessly by any route of this model.",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::routing_options::Percent;
    use router_canonical::{Message, Role};

    /// Why `request` from a Chat client has no plan (default routing options).
    fn refused_on_chat(catalog: &Catalog, request: &Request) -> ApiError {
        plan(catalog, request, RoutingOptions::default(), Protocol::Chat).unwrap_err()
    }

    const CATALOG: &str = r#"
[[suppliers]]
id = "s"
base_url = "http://127.0.0.1:1/v1"

[[models]]
id = "listed"
pricing = "supply"
list_price = { input = 1000, output = 1000 }

[[routes]]
id = "input-30-output-5"
model = "listed"
supplier = "s"
upstream_model = "a"
protocol = "chat"
internal_cost = { input = 1, output = 1 }
quote = { input = 700, output = 950 }

[[routes]]
id = "both-20"
model = "listed"
supplier = "s"
upstream_model = "b"
protocol = "chat"
priority = -1
internal_cost = { input = 1, output = 1 }
quote = { input = 800, output = 800 }
"#;

    fn plan_with(percent: Option<Percent>, zdr: bool) -> Result<Plan, ApiError> {
        let catalog = Catalog::from_toml(CATALOG, |_| None).unwrap();
        let request = Request {
            model: "listed".into(),
            messages: vec![Message::text(Role::User, "hi")],
            ..Default::default()
        };
        let options = RoutingOptions {
            min_discount: percent,
            zdr,
        };
        plan(&catalog, &request, options, Protocol::Chat)
    }

    #[test]
    fn discount_floor_applies_to_input_and_output_independently() {
        // 30% off input but only 5% off output: not eligible at a 10% floor (F-22).
        let p = plan_with(
            Some(Percent {
                units: 10,
                scale: 0,
            }),
            false,
        )
        .unwrap();
        assert_eq!(
            p.routes.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            ["both-20"]
        );
        let err = plan_with(
            Some(Percent {
                units: 2001,
                scale: 2,
            }),
            false,
        )
        .unwrap_err();
        assert_eq!(err.code, product_codes::MIN_DISCOUNT_UNAVAILABLE);
        assert_eq!(plan_with(None, false).unwrap().routes.len(), 2);
    }

    #[test]
    fn zdr_needs_a_verified_route() {
        assert_eq!(
            plan_with(None, true).unwrap_err().code,
            product_codes::ZDR_CAPACITY_UNAVAILABLE
        );
    }

    const TWO_PROTOCOLS: &str = r#"
[[suppliers]]
id = "s"
base_url = "http://127.0.0.1:1/v1"

[[models]]
id = "claude"
pricing = "fixed"
rates = { input = 1, output = 1 }

[[routes]]
id = "native"
model = "claude"
supplier = "s"
upstream_model = "c"
protocol = "messages"
internal_cost = { input = 9, output = 9 }
betas = ["context-1m-2025-08-07"]

[[routes]]
id = "chat"
model = "claude"
supplier = "s"
upstream_model = "c"
protocol = "chat"
internal_cost = { input = 1, output = 1 }

[[models]]
id = "gpt-only"
pricing = "fixed"
rates = { input = 1, output = 1 }

[[routes]]
id = "gpt"
model = "gpt-only"
supplier = "s"
upstream_model = "g"
protocol = "chat"
internal_cost = { input = 1, output = 1 }
"#;

    fn messages_request(model: &str) -> Request {
        Request {
            model: model.into(),
            messages: vec![Message::text(Role::User, "hi")],
            inbound: Some(Protocol::Messages),
            ..Default::default()
        }
    }

    #[test]
    fn native_only_requests_keep_to_their_protocol() {
        let catalog = Catalog::from_toml(TWO_PROTOCOLS, |_| None).unwrap();
        // Without native-only content the cheaper Chat route may serve Messages.
        let p = plan(
            &catalog,
            &messages_request("claude"),
            RoutingOptions::default(),
            Protocol::Messages,
        )
        .unwrap();
        assert_eq!(p.routes[0].id, "chat");
        let mut native = messages_request("claude");
        native.native_only = Some("messages[0].role".into());
        let p = plan(
            &catalog,
            &native,
            RoutingOptions::default(),
            Protocol::Messages,
        )
        .unwrap();
        assert_eq!(
            p.routes.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            ["native"]
        );
        // A model without a native route: 400 naming the field (D-10, D-26).
        native.model = "gpt-only".into();
        let err = plan(
            &catalog,
            &native,
            RoutingOptions::default(),
            Protocol::Messages,
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidParameter);
        assert_eq!(err.param.as_deref(), Some("messages[0].role"));
        // It says what the model lacks and what to choose instead (issue 29).
        assert!(
            err.message
                .contains("needs a native route speaking the `messages` protocol")
                && err.message.contains("`gpt-only`")
                && err.message.contains("`protocols`"),
            "{}",
            err.message
        );
    }

    #[test]
    fn betas_must_be_on_the_route_allowlist() {
        let catalog = Catalog::from_toml(TWO_PROTOCOLS, |_| None).unwrap();
        let mut request = messages_request("claude");
        request.native_only = Some("anthropic-beta".into());
        request.native = Some(router_canonical::NativeFields {
            protocol: Some(Protocol::Messages),
            betas: vec!["context-1m-2025-08-07".into()],
            ..Default::default()
        });
        assert_eq!(
            plan(
                &catalog,
                &request,
                RoutingOptions::default(),
                Protocol::Messages
            )
            .unwrap()
            .routes[0]
                .id,
            "native"
        );
        request.native.as_mut().unwrap().betas =
            vec!["context-1m-2025-08-07".into(), "bogus-2099-01-01".into()];
        let err = plan(
            &catalog,
            &request,
            RoutingOptions::default(),
            Protocol::Messages,
        )
        .unwrap_err();
        assert_eq!(err.param.as_deref(), Some("anthropic-beta"));
        // Only the refused identifier is named, and where it is allowed.
        assert!(
            err.message.contains("`bogus-2099-01-01`")
                && !err.message.contains("context-1m")
                && err.message.contains("`betas`"),
            "{}",
            err.message
        );
    }

    #[test]
    fn a_refusal_blames_the_requirement_no_route_meets() {
        // `claude` streams on its Messages route only, `messages-only` has
        // that route alone, and `chat-only` streams on no route at all.
        let catalog = Catalog::from_toml(
            r#"
[[suppliers]]
id = "s"
base_url = "http://127.0.0.1:1/v1"

[[models]]
id = "claude"
pricing = "fixed"
rates = { input = 1, output = 1 }

[[routes]]
id = "native"
model = "claude"
supplier = "s"
upstream_model = "c"
protocol = "messages"
capabilities = ["streaming"]
internal_cost = { input = 1, output = 1 }

[[routes]]
id = "chat"
model = "claude"
supplier = "s"
upstream_model = "c"
protocol = "chat"
internal_cost = { input = 1, output = 1 }

[[models]]
id = "messages-only"
pricing = "fixed"
rates = { input = 1, output = 1 }

[[routes]]
id = "anthropic"
model = "messages-only"
supplier = "s"
upstream_model = "m"
protocol = "messages"
capabilities = ["streaming"]
internal_cost = { input = 1, output = 1 }

[[models]]
id = "chat-only"
pricing = "fixed"
rates = { input = 1, output = 1 }

[[routes]]
id = "gpt"
model = "chat-only"
supplier = "s"
upstream_model = "g"
protocol = "chat"
internal_cost = { input = 1, output = 1 }
"#,
            |_| None,
        )
        .unwrap();
        let mut request = Request {
            model: "claude".into(),
            messages: vec![Message::text(Role::User, "hi")],
            stream: true,
            ..Default::default()
        };
        // Streaming rules out the Chat route, temperature 1.5 the Messages
        // one: neither alone is the reason.
        request.sampling.temperature = Some(1.5);
        let err = refused_on_chat(&catalog, &request);
        assert_eq!(err.code, ErrorCode::UnsupportedConversion, "{err:?}");
        // With the Messages route alone, the temperature is (CF-01).
        request.model = "messages-only".into();
        let err = refused_on_chat(&catalog, &request);
        assert_eq!(err.code, ErrorCode::InvalidParameter, "{err:?}");
        assert_eq!(err.field, Some(Field::Temperature), "{err:?}");
        request.model = "chat-only".into();
        request.sampling.temperature = None;
        let err = refused_on_chat(&catalog, &request);
        assert_eq!(err.field, Some(Field::Stream), "{err:?}");
    }

    /// CF-01 holds for Claude's Messages body on Bedrock as for Anthropic's:
    /// a model served only there refuses a temperature above 1 for its
    /// temperature, and a Converse-only model refuses penalties for them,
    /// before any supplier is called (found by the conformance matrix's
    /// `bedrock_messages` column).
    #[test]
    fn bedrock_routes_name_the_parameter_they_cannot_carry() {
        let catalog = Catalog::from_toml(
            r#"
[[suppliers]]
id = "s"
base_url = "http://127.0.0.1:1/v1"

[[models]]
id = "bedrock-claude"
pricing = "fixed"
rates = { input = 1, output = 1 }

[[routes]]
id = "invoke"
model = "bedrock-claude"
supplier = "s"
upstream_model = "anthropic.claude"
protocol = "bedrock_messages"
internal_cost = { input = 1, output = 1 }

[[models]]
id = "converse-only"
pricing = "fixed"
rates = { input = 1, output = 1 }

[[routes]]
id = "converse"
model = "converse-only"
supplier = "s"
upstream_model = "amazon.nova"
protocol = "bedrock_converse"
internal_cost = { input = 1, output = 1 }
"#,
            |_| None,
        )
        .unwrap();
        let mut request = Request {
            model: "bedrock-claude".into(),
            messages: vec![Message::text(Role::User, "hi")],
            ..Default::default()
        };
        request.sampling.temperature = Some(1.5);
        let err = refused_on_chat(&catalog, &request);
        assert_eq!(err.code, ErrorCode::InvalidParameter, "{err:?}");
        assert_eq!(err.field, Some(Field::Temperature), "{err:?}");
        // Converse takes the temperature, but no penalties.
        request.model = "converse-only".into();
        assert!(
            plan(
                &catalog,
                &request,
                RoutingOptions::default(),
                Protocol::Chat
            )
            .is_ok()
        );
        request.sampling.temperature = None;
        request.sampling.presence_penalty = Some(0.5);
        let err = refused_on_chat(&catalog, &request);
        assert_eq!(err.code, ErrorCode::InvalidParameter, "{err:?}");
        assert_eq!(err.field, Some(Field::Penalties), "{err:?}");
    }
}

#[cfg(test)]
mod vision_tests {
    use super::*;
    use router_canonical::{ContentPart, ImageSource, Message, Role};

    /// H-08: a model that accepts images but has no vision route in the
    /// catalog is out of image capacity (503), unlike a model that does
    /// not take images at all (400).
    #[test]
    fn an_image_model_without_a_vision_route_is_out_of_capacity() {
        let catalog = Catalog::from_toml(
            r#"
[[suppliers]]
id = "s"
base_url = "http://127.0.0.1:1/v1"

[[models]]
id = "seer"
pricing = "fixed"
image_input = true
rates = { input = 1, output = 1 }

[[routes]]
id = "text"
model = "seer"
supplier = "s"
upstream_model = "t"
protocol = "chat"
capabilities = ["streaming"]
internal_cost = { input = 1, output = 1 }

[[models]]
id = "blind"
pricing = "fixed"
rates = { input = 1, output = 1 }

[[routes]]
id = "blind-text"
model = "blind"
supplier = "s"
upstream_model = "b"
protocol = "chat"
capabilities = ["streaming"]
internal_cost = { input = 1, output = 1 }
"#,
            |_| None,
        )
        .unwrap();
        let image = |model: &str| Request {
            model: model.into(),
            messages: vec![Message {
                role: Role::User,
                content: vec![ContentPart::Image {
                    source: ImageSource::Url {
                        url: "https://example.com/a.png".into(),
                    },
                    detail: None,
                    cache_control: None,
                }],
                content_was_string: false,
                name: None,
            }],
            ..Default::default()
        };
        let err = plan(
            &catalog,
            &image("seer"),
            RoutingOptions::default(),
            Protocol::Chat,
        )
        .unwrap_err();
        assert_eq!(
            err.code,
            product_codes::IMAGE_CAPACITY_UNAVAILABLE,
            "{err:?}"
        );
        assert_eq!(err.status(), 503);
        let err = plan(
            &catalog,
            &image("blind"),
            RoutingOptions::default(),
            Protocol::Chat,
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::UnsupportedParameter, "{err:?}");
    }
}
