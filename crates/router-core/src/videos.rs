//! Video creation's checks against the catalog (section O), pure: the
//! request (already past `router_videos::client::parse_create`) against its
//! model's [`VideoSpec`], and the charge of a valid request. Looking the
//! model up (unknown → 404 `model_not_found`, not a video model → 400,
//! GP-21) is the server's.
//!
//! Every refusal is 400 `invalid_parameter` naming the member at fault, in
//! this order: mode, prompt, resolution, duration, aspect ratio, references.

use crate::catalog::{VideoRate, VideoSpec};
use router_canonical::{ApiError, VideoRequest};

/// The one mode every video model accepts (GP-21).
pub const REFERENCES_MODE: &str = "references";

/// Check `request` against its model's capabilities and tariff; the rate of
/// its resolution when every rule passes.
pub fn check_against(spec: &VideoSpec, request: &VideoRequest) -> Result<VideoRate, ApiError> {
    // GP-21: `references` always; another mode only if the model lists it.
    if request.mode != REFERENCES_MODE && !spec.modes.contains(&request.mode) {
        return Err(ApiError::invalid(
            "mode",
            format!(
                "`mode` `{}` is not offered by this model; use `{REFERENCES_MODE}`{}.",
                request.mode,
                listed(&spec.modes, " or one of ")
            ),
        ));
    }
    // O-04, GP-70: Unicode code points, not bytes.
    let prompt_length = request.prompt.chars().count();
    if prompt_length > spec.max_prompt_length as usize {
        return Err(ApiError::invalid(
            "prompt",
            format!(
                "`prompt` is {prompt_length} characters; this model accepts at most {}.",
                spec.max_prompt_length
            ),
        ));
    }
    // O-07: listed in the capabilities AND priced.
    if !spec.resolutions.contains(&request.resolution) {
        return Err(ApiError::invalid(
            "resolution",
            format!(
                "`resolution` `{}` is not supported by this model{}.",
                request.resolution,
                listed(&spec.resolutions, "; use one of ")
            ),
        ));
    }
    let Some(rate) = spec.rates.get(&request.resolution).copied() else {
        return Err(ApiError::invalid(
            "resolution",
            format!(
                "`resolution` `{}` has no published price and cannot be ordered.",
                request.resolution
            ),
        ));
    };
    // O-08.
    if !spec.durations.contains(&request.duration_seconds) {
        let durations: Vec<String> = spec.durations.iter().map(u32::to_string).collect();
        return Err(ApiError::invalid(
            "duration",
            format!(
                "`duration` {} is not supported by this model{}.",
                request.duration_seconds,
                listed(&durations, "; use one of ")
            ),
        ));
    }
    // O-06: optional, but when present one of the model's.
    if let Some(ratio) = &request.aspect_ratio
        && !spec.aspect_ratios.contains(ratio)
    {
        return Err(ApiError::invalid(
            "aspect_ratio",
            format!(
                "`aspect_ratio` `{ratio}` is not supported by this model{}.",
                listed(&spec.aspect_ratios, "; use one of ")
            ),
        ));
    }
    check_references(spec, request)?;
    Ok(rate)
}

/// O-13: each kind, audio plus video, and all assets against their caps.
fn check_references(spec: &VideoSpec, request: &VideoRequest) -> Result<(), ApiError> {
    let refs = &request.references;
    let caps = spec.references;
    let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
    let checks = [
        (
            "references.image_urls",
            "image",
            count(refs.images.len()),
            caps.images,
        ),
        (
            "references.video_urls",
            "video",
            count(refs.videos.len()),
            caps.videos,
        ),
        (
            "references.audio_urls",
            "audio",
            count(refs.audios.len()),
            caps.audios,
        ),
        (
            "references",
            "audio and video",
            count(refs.audios.len()).saturating_add(count(refs.videos.len())),
            caps.audio_videos,
        ),
        ("references", "", count(refs.total()), caps.total),
    ];
    for (param, kind, have, cap) in checks {
        if have > u64::from(cap) {
            let what = if kind.is_empty() {
                "reference assets in all".to_owned()
            } else {
                format!("{kind} references")
            };
            return Err(ApiError::invalid(
                param,
                format!("This model accepts at most {cap} {what}; the request has {have}."),
            ));
        }
    }
    Ok(())
}

/// `prefix` and the values in backquotes, or nothing when there are none.
fn listed(values: &[String], prefix: &str) -> String {
    if values.is_empty() {
        return String::new();
    }
    let quoted: Vec<String> = values.iter().map(|v| format!("`{v}`")).collect();
    format!("{prefix}{}", quoted.join(", "))
}

/// The charge of a video of `duration_seconds` at `rate`, in nano-USD:
/// `max(minimum, duration × per_second)` (O-15); with `per_second` 0 the
/// minimum is a fixed price. The product is checked: should it overflow
/// (no real tariff comes near), the charge saturates at `i64::MAX`, which
/// no balance covers, so the request is refused rather than undercharged.
pub fn charge_nanos(rate: VideoRate, duration_seconds: u32) -> i64 {
    let by_time = rate
        .per_second
        .checked_mul(i64::from(duration_seconds))
        .unwrap_or(i64::MAX);
    by_time.max(rate.minimum)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::ReferenceCaps;
    use router_canonical::VideoReferences;

    fn spec() -> VideoSpec {
        VideoSpec {
            resolutions: vec!["720p".into(), "1080p".into(), "4k".into()],
            durations: vec![5, 10],
            aspect_ratios: vec!["16:9".into(), "9:16".into()],
            max_prompt_length: 10,
            references: ReferenceCaps {
                images: 3,
                videos: 2,
                audios: 2,
                audio_videos: 2,
                total: 4,
            },
            modes: vec!["text".into()],
            rates: [
                (
                    "720p".to_owned(),
                    VideoRate {
                        minimum: 500_000_000,
                        per_second: 100_000_000,
                    },
                ),
                (
                    "1080p".to_owned(),
                    VideoRate {
                        minimum: 1_000_000_000,
                        per_second: 0,
                    },
                ),
            ]
            .into(),
        }
    }

    fn request() -> VideoRequest {
        VideoRequest {
            model: "vendor/vid".into(),
            prompt: "a cat".into(),
            mode: REFERENCES_MODE.into(),
            resolution: "720p".into(),
            duration_seconds: 5,
            aspect_ratio: None,
            references: VideoReferences::default(),
            client_task_id: "t-1".into(),
        }
    }

    fn param_of(request: &VideoRequest) -> Option<String> {
        check_against(&spec(), request).unwrap_err().param
    }

    fn urls(n: usize) -> Vec<String> {
        (0..n)
            .map(|i| format!("https://media.example/{i}"))
            .collect()
    }

    #[test]
    fn a_valid_request_gets_its_resolutions_rate() {
        let rate = check_against(&spec(), &request()).unwrap();
        assert_eq!(rate.minimum, 500_000_000);
        let request = VideoRequest {
            mode: "text".into(),
            resolution: "1080p".into(),
            duration_seconds: 10,
            aspect_ratio: Some("9:16".into()),
            prompt: "ten chars!".into(),
            ..request()
        };
        assert_eq!(check_against(&spec(), &request).unwrap().per_second, 0);
    }

    /// GP-21, O-05: `references` always, a listed mode, nothing else.
    #[test]
    fn only_references_or_a_listed_mode() {
        let other = VideoRequest {
            mode: "image_to_video".into(),
            ..request()
        };
        assert_eq!(param_of(&other).as_deref(), Some("mode"));
        let none_listed = VideoSpec {
            modes: vec![],
            ..spec()
        };
        assert!(check_against(&none_listed, &request()).is_ok());
    }

    /// O-04, GP-70: the limit counts code points, not bytes.
    #[test]
    fn the_prompt_limit_counts_code_points() {
        let ten_wide = VideoRequest {
            prompt: "猫".repeat(10),
            ..request()
        };
        assert!(
            check_against(&spec(), &ten_wide).is_ok(),
            "30 bytes, 10 code points"
        );
        let eleven = VideoRequest {
            prompt: "a".repeat(11),
            ..request()
        };
        let error = check_against(&spec(), &eleven).unwrap_err();
        assert_eq!(error.param.as_deref(), Some("prompt"));
        assert_eq!(error.status(), 400);
    }

    /// O-07: listed and priced; O-08: a listed duration; O-06: a listed ratio.
    #[test]
    fn resolution_duration_and_aspect_ratio_must_be_listed() {
        for (bad, param) in [
            (
                VideoRequest {
                    resolution: "480p".into(),
                    ..request()
                },
                "resolution",
            ),
            (
                VideoRequest {
                    resolution: "4k".into(),
                    ..request()
                },
                "resolution",
            ),
            (
                VideoRequest {
                    duration_seconds: 7,
                    ..request()
                },
                "duration",
            ),
            (
                VideoRequest {
                    aspect_ratio: Some("1:1".into()),
                    ..request()
                },
                "aspect_ratio",
            ),
        ] {
            assert_eq!(param_of(&bad).as_deref(), Some(param), "{bad:?}");
        }
        let priced_message = check_against(
            &spec(),
            &VideoRequest {
                resolution: "4k".into(),
                ..request()
            },
        )
        .unwrap_err()
        .message;
        assert!(
            priced_message.contains("no published price"),
            "{priced_message}"
        );
        // No aspect ratios listed: any ratio is refused, none is fine.
        let no_ratios = VideoSpec {
            aspect_ratios: vec![],
            ..spec()
        };
        assert!(check_against(&no_ratios, &request()).is_ok());
    }

    /// O-13: at each cap accepted, one over each cap refused.
    #[test]
    fn reference_caps_per_kind_combined_and_total() {
        let with = |images: usize, videos: usize, audios: usize| VideoRequest {
            references: VideoReferences {
                images: urls(images),
                videos: urls(videos),
                audios: urls(audios),
            },
            ..request()
        };
        for ok in [with(3, 0, 0), with(0, 2, 0), with(0, 0, 2), with(2, 1, 1)] {
            assert!(check_against(&spec(), &ok).is_ok(), "{:?}", ok.references);
        }
        for (bad, param) in [
            (with(4, 0, 0), "references.image_urls"),
            (with(0, 3, 0), "references.video_urls"),
            (with(0, 0, 3), "references.audio_urls"),
            (with(0, 2, 1), "references"),
            (with(3, 1, 1), "references"),
        ] {
            assert_eq!(
                param_of(&bad).as_deref(),
                Some(param),
                "{:?}",
                bad.references
            );
        }
        // Caps default to 0: a model without references refuses any.
        let none = VideoSpec {
            references: ReferenceCaps::default(),
            ..spec()
        };
        assert!(check_against(&none, &with(1, 0, 0)).is_err());
        assert!(check_against(&none, &with(0, 0, 0)).is_ok());
    }

    /// O-15: max(minimum, duration × per-second); per-second 0 is a fixed price.
    #[test]
    fn the_charge_is_the_larger_of_minimum_and_time() {
        let rate = VideoRate {
            minimum: 500_000_000,
            per_second: 100_000_000,
        };
        assert_eq!(charge_nanos(rate, 3), 500_000_000);
        assert_eq!(charge_nanos(rate, 5), 500_000_000);
        assert_eq!(charge_nanos(rate, 8), 800_000_000);
        let fixed = VideoRate {
            minimum: 1_000_000_000,
            per_second: 0,
        };
        assert_eq!(charge_nanos(fixed, 60), 1_000_000_000);
        let huge = VideoRate {
            minimum: 0,
            per_second: i64::MAX / 2,
        };
        assert_eq!(charge_nanos(huge, 3), i64::MAX);
    }
}
