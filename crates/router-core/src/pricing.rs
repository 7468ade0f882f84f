//! What a request may cost (the reservation) and what it does cost (the charge).

use crate::catalog::{Model, Pricing, Route};
use router_canonical::money::ChargeOverflow;
use router_canonical::{NanoUsd, Rates, Request, Usage};

/// Upper bound on input tokens, without a tokenizer: byte-level BPE tokens
/// cover at least one byte each, so UTF-8 bytes of all text bound the count.
/// Per-message framing and images are added generously.
pub fn input_token_bound(request: &Request) -> u64 {
    const PER_MESSAGE_OVERHEAD: u64 = 16;
    const PER_IMAGE_WORST_CASE: u64 = 6_000;
    const FIXED_OVERHEAD: u64 = 64;
    let images: u64 = request
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .filter(|p| matches!(p, router_canonical::ContentPart::Image { .. }))
        .count() as u64;
    request.input_chars() as u64
        + PER_MESSAGE_OVERHEAD * request.messages.len() as u64
        + PER_IMAGE_WORST_CASE * images
        + FIXED_OVERHEAD
}

/// The rates a customer pays for `model` when `route` serves the request.
pub fn customer_rates<'a>(model: &'a Model, route: &'a Route) -> Option<&'a Rates> {
    match &model.pricing {
        Pricing::Fixed(rates) => Some(rates),
        Pricing::Supply => route.quote.as_ref(),
        // Priced per image, never per token (image generation, `images.rs`).
        Pricing::PerImage(_) => None,
    }
}

/// The worst-case charge over the eligible routes.
pub fn reservation(
    model: &Model,
    routes: &[std::sync::Arc<Route>],
    request: &Request,
) -> Result<NanoUsd, ChargeOverflow> {
    let input = input_token_bound(request);
    let output = u64::from(
        request
            .sampling
            .max_output_tokens
            .unwrap_or(model.max_output_tokens),
    );
    let mut worst = NanoUsd::ZERO;
    for route in routes {
        if let Some(rates) = customer_rates(model, route) {
            worst = worst.max(rates.worst_case(input, output)?);
        }
    }
    Ok(worst)
}

/// The charge for a valid final success on `route`.
pub fn charge(model: &Model, route: &Route, usage: &Usage) -> Result<NanoUsd, ChargeOverflow> {
    customer_rates(model, route).map_or(Ok(NanoUsd::ZERO), |rates| rates.charge(usage))
}
