//! What the gateway is asked to serve: a client's canonical request (its
//! protocol content, as the client codec parsed it) with the gateway's own
//! options for it beside it, never inside it. The wire crates' model knows
//! nothing of these options; the server reads them from the body's gateway
//! members ([`RoutingOptions`]), the `x-ci-prompt-cache` header and the
//! key's policy ([`PromptCacheMode`]).

use crate::routing_options::RoutingOptions;
use router_canonical::{ApiError, Protocol, Request};
use serde::{Deserialize, Serialize};

/// A canonical request and the gateway's options for it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GatewayRequest {
    /// The protocol content: what the client's codec parsed.
    pub request: Request,
    /// The routing constraints of the body's gateway members
    /// (`min_discount_percent`, `zdr`).
    pub routing: RoutingOptions,
    /// The prompt-cache marker policy (`x-ci-prompt-cache`, else the key's
    /// mode).
    pub prompt_cache: PromptCacheMode,
}

impl GatewayRequest {
    /// The gateway's request for a parsed `request` with the body's
    /// routing options and the default prompt-cache policy. Refuses what
    /// the gateway does not serve although the protocol allows it: more
    /// than one choice (`n`, B-27, E-06, GP-50) or sample (`best_of`,
    /// E-06), with the 400 `invalid_parameter` naming the field that a
    /// client's parse answered before.
    pub fn new(request: Request, routing: RoutingOptions) -> Result<GatewayRequest, ApiError> {
        if request.sampling.choices.is_some_and(|n| n != 1) {
            let what = match request.inbound {
                Some(Protocol::Completions) => "multiple samples",
                _ => "multiple choices",
            };
            return Err(ApiError::invalid(
                "n",
                format!("`n` must be 1: {what} are not supported"),
            ));
        }
        if request.sampling.best_of.is_some_and(|n| n != 1) {
            return Err(ApiError::invalid(
                "best_of",
                "`best_of` must be 1: multiple samples are not supported",
            ));
        }
        Ok(GatewayRequest {
            request,
            routing,
            prompt_cache: PromptCacheMode::default(),
        })
    }
}

/// A request with no gateway options (the defaults) and no gateway check:
/// for callers inside the gateway that build the canonical request
/// themselves. A client's request goes through [`GatewayRequest::new`].
impl From<Request> for GatewayRequest {
    fn from(request: Request) -> Self {
        GatewayRequest {
            request,
            routing: RoutingOptions::default(),
            prompt_cache: PromptCacheMode::default(),
        }
    }
}

/// What the router does with prompt-cache markers (`x-ci-prompt-cache`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptCacheMode {
    /// Client markers are forwarded; none are added (the default).
    #[default]
    Passthrough,
    /// On a native Messages route, a five-minute marker is added where the
    /// client put none.
    On,
    /// Client markers are kept; routing affinity is disabled.
    Off,
}

impl PromptCacheMode {
    /// Whether markers travel unchanged.
    pub fn is_passthrough(&self) -> bool {
        *self == PromptCacheMode::Passthrough
    }

    /// Parse the exact lowercase header token.
    pub fn parse(value: &str) -> Option<PromptCacheMode> {
        match value {
            "passthrough" => Some(PromptCacheMode::Passthrough),
            "on" => Some(PromptCacheMode::On),
            "off" => Some(PromptCacheMode::Off),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use router_canonical::{ErrorCode, Sampling};

    fn asking(n: Option<u32>, inbound: Protocol) -> Request {
        Request {
            sampling: Sampling {
                choices: n,
                ..Sampling::default()
            },
            inbound: Some(inbound),
            ..Request::default()
        }
    }

    #[test]
    fn one_choice_or_none_said_is_served() {
        for n in [None, Some(1)] {
            let request = asking(n, Protocol::Chat);
            let accepted = GatewayRequest::new(request.clone(), RoutingOptions::default());
            assert_eq!(accepted.map(|g| g.request), Ok(request));
        }
    }

    /// B-27, E-06, GP-50: `n` other than 1 is a 400 naming `n`.
    #[test]
    fn several_choices_are_refused_naming_n() {
        for (n, inbound, message) in [
            (
                2,
                Protocol::Chat,
                "`n` must be 1: multiple choices are not supported",
            ),
            (
                0,
                Protocol::Chat,
                "`n` must be 1: multiple choices are not supported",
            ),
            (
                3,
                Protocol::Completions,
                "`n` must be 1: multiple samples are not supported",
            ),
        ] {
            let error = GatewayRequest::new(asking(Some(n), inbound), RoutingOptions::default())
                .unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidParameter);
            assert_eq!(error.param.as_deref(), Some("n"));
            assert_eq!(error.message, message);
        }
    }

    /// E-06: Completions `best_of` other than 1 is a 400 naming `best_of`;
    /// 1 or unsaid is served.
    #[test]
    fn several_samples_are_refused_naming_best_of() {
        let with_best_of = |best_of| Request {
            sampling: Sampling {
                best_of,
                ..Sampling::default()
            },
            inbound: Some(Protocol::Completions),
            ..Request::default()
        };
        for best_of in [0, 2] {
            let error = GatewayRequest::new(with_best_of(Some(best_of)), RoutingOptions::default())
                .unwrap_err();
            assert_eq!(error.code, ErrorCode::InvalidParameter);
            assert_eq!(error.param.as_deref(), Some("best_of"));
            assert_eq!(
                error.message,
                "`best_of` must be 1: multiple samples are not supported"
            );
        }
        for best_of in [None, Some(1)] {
            assert!(GatewayRequest::new(with_best_of(best_of), RoutingOptions::default()).is_ok());
        }
    }
}
