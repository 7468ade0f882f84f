//! Video creation's checks against the catalog (section O), pure: the
//! request (already past `router_videos::client::parse_create`) against its
//! model's [`VideoSpec`], and the charge of a valid request. Looking the
//! model up (unknown → 404 `model_not_found`, not a video model → 400,
//! GP-21) is the server's.

use crate::catalog::{VideoRate, VideoSpec};
use router_canonical::{ApiError, VideoRequest};

/// The one mode every video model accepts (GP-21).
pub const REFERENCES_MODE: &str = "references";

/// Check `request` against its model's capabilities and tariff; the rate of
/// its resolution when every rule passes.
pub fn check_against(spec: &VideoSpec, request: &VideoRequest) -> Result<VideoRate, ApiError> {
    let _ = (spec, request);
    todo!()
}

/// The charge of a video of `duration_seconds` at `rate`, in nano-USD:
/// `max(minimum, duration × per_second)` (O-15).
pub fn charge_nanos(rate: VideoRate, duration_seconds: u32) -> i64 {
    let _ = (rate, duration_seconds);
    todo!()
}
