//! A/B experiments on prompts and models (F-01..F-06, GP-44, GP-45): which
//! variant a request gets, and what that variant changes in it.
//!
//! An experiment belongs to one account. Only `running` and `promoted`
//! experiments touch a request; a draft, paused or completed one leaves it
//! exactly as it came (F-03). With an end user the choice is a stable hash
//! of (experiment, account, end user), so the same person always sees the
//! same variant; without one it is drawn per request (GP-44).

use router_canonical::{Message, Request, Role};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExperimentStatus {
    Draft,
    Running,
    Paused,
    Completed,
    Promoted,
}

impl ExperimentStatus {
    pub const ALL: [ExperimentStatus; 5] = [
        ExperimentStatus::Draft,
        ExperimentStatus::Running,
        ExperimentStatus::Paused,
        ExperimentStatus::Completed,
        ExperimentStatus::Promoted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ExperimentStatus::Draft => "draft",
            ExperimentStatus::Running => "running",
            ExperimentStatus::Paused => "paused",
            ExperimentStatus::Completed => "completed",
            ExperimentStatus::Promoted => "promoted",
        }
    }

    pub fn parse(text: &str) -> Option<ExperimentStatus> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// The lifecycle: draft → running; running ↔ paused; running or paused
    /// → completed or promoted. Completed and promoted are final.
    pub fn can_become(self, to: ExperimentStatus) -> bool {
        use ExperimentStatus::*;
        matches!(
            (self, to),
            (Draft, Running)
                | (Running, Paused)
                | (Paused, Running)
                | (Running | Paused, Completed | Promoted)
        )
    }

    /// The statuses a change to `to` may start from.
    pub fn sources_of(to: ExperimentStatus) -> Vec<ExperimentStatus> {
        Self::ALL
            .into_iter()
            .filter(|from| from.can_become(to))
            .collect()
    }
}

/// How a variant's `system` meets the request's own system instruction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SystemMode {
    /// Before the request's own system instructions.
    #[default]
    Prepend,
    /// Instead of them.
    Replace,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub name: String,
    /// Relative share of the traffic, at least 1.
    pub weight: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    #[serde(default)]
    pub system_mode: SystemMode,
    /// Another model of the catalog: its own routes, prices and policies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl Variant {
    /// Whether the variant rewrites the prompt (GP-45: refused with images).
    pub fn rewrites(&self) -> bool {
        self.system.is_some()
    }

    /// Apply the variant to a parsed request. The system instruction is a
    /// canonical `Role::System` message first in line, so each supplier
    /// dialect's encoder carries it its own way.
    pub fn apply(&self, request: &mut Request) {
        if let Some(system) = &self.system {
            if self.system_mode == SystemMode::Replace {
                request
                    .messages
                    .retain(|m| !matches!(m.role, Role::System | Role::Developer));
            }
            request
                .messages
                .insert(0, Message::text(Role::System, system.clone()));
        }
        if let Some(model) = &self.model {
            request.model = model.clone();
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Experiment {
    pub id: Uuid,
    pub account_id: Uuid,
    pub slug: String,
    pub status: ExperimentStatus,
    pub variants: Vec<Variant>,
    /// The promoted variant's name.
    pub winner: Option<String>,
}

impl Experiment {
    /// Whether the experiment changes requests at all now (F-01..F-03).
    pub fn is_live(&self) -> bool {
        matches!(
            self.status,
            ExperimentStatus::Running | ExperimentStatus::Promoted
        )
    }

    /// Whether any variant that can be assigned rewrites the prompt.
    pub fn rewrites(&self) -> bool {
        match self.status {
            ExperimentStatus::Promoted => self.winner_variant().is_some_and(Variant::rewrites),
            _ => self.variants.iter().any(Variant::rewrites),
        }
    }

    fn winner_variant(&self) -> Option<&Variant> {
        let winner = self.winner.as_deref()?;
        self.variants.iter().find(|v| v.name == winner)
    }

    /// The variant of one request, `None` when the experiment is not live.
    /// `draw` is a fresh random number, used only without an end user.
    pub fn assign(&self, end_user: Option<&str>, draw: u64) -> Option<&Variant> {
        match self.status {
            ExperimentStatus::Promoted => self.winner_variant(),
            ExperimentStatus::Running => {
                let point = match end_user {
                    Some(user) => sticky_point(self.id, self.account_id, user),
                    None => draw,
                };
                self.weighted(point)
            }
            _ => None,
        }
    }

    fn weighted(&self, point: u64) -> Option<&Variant> {
        let total: u64 = self.variants.iter().map(|v| u64::from(v.weight)).sum();
        if total == 0 {
            return None;
        }
        let mut at = point % total;
        for variant in &self.variants {
            let weight = u64::from(variant.weight);
            if at < weight {
                return Some(variant);
            }
            at -= weight;
        }
        None
    }
}

/// A stable 64-bit point for (experiment, account, end user): FNV-1a over
/// the three, finished with the SplitMix64 mixer so nearby user names
/// spread evenly. Fixed forever: changing it would move end users between
/// variants.
pub fn sticky_point(experiment: Uuid, account: Uuid, end_user: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in experiment
        .as_bytes()
        .iter()
        .chain(account.as_bytes())
        .chain(end_user.as_bytes())
    {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    mix(hash)
}

/// The SplitMix64 finalizer.
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn experiment(status: ExperimentStatus, weights: &[u32]) -> Experiment {
        Experiment {
            id: Uuid::from_u128(0x1234),
            account_id: Uuid::from_u128(0x5678),
            slug: "exp".into(),
            status,
            variants: weights
                .iter()
                .enumerate()
                .map(|(i, w)| Variant {
                    name: format!("v{i}"),
                    weight: *w,
                    system: Some(format!("system {i}")),
                    system_mode: SystemMode::Prepend,
                    model: None,
                })
                .collect(),
            winner: Some("v1".into()),
        }
    }

    /// Pearson's χ² of observed counts against the weights.
    fn chi_squared(counts: &[u64], weights: &[u32]) -> f64 {
        let n: u64 = counts.iter().sum();
        let total: u32 = weights.iter().sum();
        counts
            .iter()
            .zip(weights)
            .map(|(c, w)| {
                let expected = n as f64 * f64::from(*w) / f64::from(total);
                (*c as f64 - expected).powi(2) / expected
            })
            .sum()
    }

    #[test]
    fn the_same_end_user_always_gets_the_same_variant() {
        // F-06: 20 requests of one end user, one variant, whatever the draw.
        let e = experiment(ExperimentStatus::Running, &[1, 1, 1]);
        let first = e.assign(Some("alice"), 0).unwrap().name.clone();
        for draw in 1..20 {
            assert_eq!(e.assign(Some("alice"), draw).unwrap().name, first);
        }
    }

    #[test]
    fn end_users_spread_by_weight() {
        // 1,000 end users over weights 1:3:6; χ² with 2 degrees of freedom
        // stays under 13.82 (p = 0.001). Deterministic: the hash is fixed.
        let weights = [1, 3, 6];
        let e = experiment(ExperimentStatus::Running, &weights);
        let mut counts = [0u64; 3];
        for i in 0..1000 {
            let v = e.assign(Some(&format!("user-{i}")), 0).unwrap();
            counts[v.name[1..].parse::<usize>().unwrap()] += 1;
        }
        let chi = chi_squared(&counts, &weights);
        assert!(chi < 13.82, "χ² = {chi}, counts {counts:?}");
    }

    #[test]
    fn draws_without_an_end_user_spread_by_weight() {
        // GP-44: per-request draws; a seeded SplitMix64 sequence stands in
        // for the server's random numbers.
        let weights = [1, 1];
        let e = experiment(ExperimentStatus::Running, &weights);
        let mut counts = [0u64; 2];
        let mut seed = 42u64;
        for _ in 0..1000 {
            seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let v = e.assign(None, mix(seed)).unwrap();
            counts[v.name[1..].parse::<usize>().unwrap()] += 1;
        }
        let chi = chi_squared(&counts, &weights);
        assert!(chi < 10.83, "χ² = {chi}, counts {counts:?}");
    }

    #[test]
    fn only_running_and_promoted_experiments_assign() {
        for status in [
            ExperimentStatus::Draft,
            ExperimentStatus::Paused,
            ExperimentStatus::Completed,
        ] {
            assert!(experiment(status, &[1, 1]).assign(Some("u"), 7).is_none());
        }
        let promoted = experiment(ExperimentStatus::Promoted, &[1, 1]);
        for draw in 0..10 {
            assert_eq!(promoted.assign(None, draw).unwrap().name, "v1");
        }
    }

    #[test]
    fn transitions() {
        use ExperimentStatus::*;
        assert!(Draft.can_become(Running));
        assert!(Running.can_become(Paused) && Paused.can_become(Running));
        assert!(Paused.can_become(Promoted) && Running.can_become(Completed));
        assert!(!Draft.can_become(Paused));
        assert!(!Draft.can_become(Promoted));
        assert!(!Completed.can_become(Running));
        assert!(!Promoted.can_become(Paused));
        assert!(!Running.can_become(Running));
        assert_eq!(sources_of_names(Promoted), ["running", "paused"]);
    }

    fn sources_of_names(to: ExperimentStatus) -> Vec<&'static str> {
        ExperimentStatus::sources_of(to)
            .into_iter()
            .map(ExperimentStatus::as_str)
            .collect()
    }

    #[test]
    fn variants_rewrite_the_system_instruction() {
        let mut request = Request {
            messages: vec![
                Message::text(Role::System, "own"),
                Message::text(Role::User, "hi"),
            ],
            ..Default::default()
        };
        let mut variant = Variant {
            name: "a".into(),
            weight: 1,
            system: Some("variant".into()),
            system_mode: SystemMode::Prepend,
            model: Some("other".into()),
        };
        let mut prepended = request.clone();
        variant.apply(&mut prepended);
        assert_eq!(prepended.messages.len(), 3);
        assert_eq!(
            prepended.messages[0],
            Message::text(Role::System, "variant")
        );
        assert_eq!(prepended.model, "other");
        variant.system_mode = SystemMode::Replace;
        variant.apply(&mut request);
        assert_eq!(request.messages.len(), 2);
        assert_eq!(request.messages[0], Message::text(Role::System, "variant"));
    }
}
