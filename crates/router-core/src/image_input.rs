//! The conservative bound on image input (H-07, Q-12, GP-69): a request
//! with images whose estimated input is above 272,000 tokens is refused
//! with 400 `image_input_limit` before any supplier call. The estimate is
//! deliberately high (what is billed is the supplier's reported usage):
//! text at one token per 4 bytes, rounded up, plus each image's worst-case
//! cost from its dimensions when its bytes are here (base64, or an upload
//! already resolved), otherwise the largest cost any image can have.

use crate::product_codes;
use base64::Engine as _;
use router_canonical::{ApiError, ContentPart, ImageSource, Request};

/// Above this estimate an image request is refused.
pub const IMAGE_INPUT_BOUND: u64 = 272_000;
/// The most one image can cost under the suppliers' formulas (tiles of 512
/// px after fitting 2048×768: 85 + 170 × 8 = 1,445; pixels / 750 after
/// fitting 1568 on the long edge: about 1,600), rounded up.
pub const MAX_IMAGE_TOKENS: u64 = 1_600;

/// The worst case of the suppliers' image formulas for `width`×`height`,
/// in integers, every scaling rounded up (so never below the real cost).
pub fn image_tokens(width: u64, height: u64) -> u64 {
    if width == 0 || height == 0 {
        return MAX_IMAGE_TOKENS;
    }
    // Scales (w, h) so that `side(w, h)` is at most `limit`.
    let fit = |w: u64, h: u64, side: u64, limit: u64| {
        if side > limit {
            (
                w.saturating_mul(limit).div_ceil(side),
                h.saturating_mul(limit).div_ceil(side),
            )
        } else {
            (w, h)
        }
    };
    // OpenAI high detail: fit in 2048×2048, then the short side to 768,
    // then 170 per 512-pixel tile plus 85.
    let (w, h) = fit(width, height, width.max(height), 2048);
    let (w, h) = fit(w, h, w.min(h), 768);
    let openai = 85 + 170 * w.div_ceil(512) * h.div_ceil(512);
    // Anthropic: fit the long edge in 1568, then pixels / 750.
    let (w, h) = fit(width, height, width.max(height), 1568);
    let anthropic = w.saturating_mul(h).div_ceil(750);
    openai.max(anthropic).min(MAX_IMAGE_TOKENS)
}

fn part_tokens(part: &ContentPart) -> u64 {
    match part {
        ContentPart::Image { source, .. } => match source {
            ImageSource::Base64 { data, .. } => {
                // The header is in the first bytes: decode only those.
                let head = &data[..data.len().min(64 * 1024) / 4 * 4];
                base64::engine::general_purpose::STANDARD
                    .decode(head)
                    .ok()
                    .and_then(|bytes| imagesize::blob_size(&bytes).ok())
                    .map_or(MAX_IMAGE_TOKENS, |size| {
                        image_tokens(size.width as u64, size.height as u64)
                    })
            }
            _ => MAX_IMAGE_TOKENS,
        },
        ContentPart::ToolResult { content, .. } => content.iter().map(part_tokens).sum(),
        _ => 0,
    }
}

/// The conservative estimate of a request's input, in tokens.
pub fn estimate(request: &Request) -> u64 {
    let text = (request.input_chars() as u64).div_ceil(4);
    let images: u64 = request
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .map(part_tokens)
        .sum();
    text + images
}

/// Refuses an image request whose estimate is above the bound.
pub fn check(request: &Request) -> Result<(), ApiError> {
    if !request.has_images() {
        return Ok(());
    }
    let estimate = estimate(request);
    if estimate > IMAGE_INPUT_BOUND {
        return Err(ApiError::new(
            product_codes::IMAGE_INPUT_LIMIT,
            format!(
                "This request's input with images is estimated at {estimate} tokens, above the {IMAGE_INPUT_BOUND}-token bound for image requests."
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_costs_are_bounded_and_grow_with_size() {
        assert_eq!(image_tokens(1, 1), 255);
        assert!(image_tokens(512, 512) < image_tokens(1024, 1024));
        assert_eq!(image_tokens(65_535, 65_535), MAX_IMAGE_TOKENS);
        assert_eq!(image_tokens(0, 10), MAX_IMAGE_TOKENS);
    }
}
