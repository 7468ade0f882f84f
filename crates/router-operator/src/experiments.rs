//! An account's A/B experiments as the operator sees them: created as
//! drafts, shown and listed with their assignment counts, moved along
//! draft → running ↔ paused → completed or promoted. Requests meet them in
//! `router_core::experiments`.

use crate::error::{OperatorError, Refusal, Resource};
use crate::{List, Operator};
use router_core::{Catalog, Experiment, ExperimentStatus, Modality, SystemMode, Variant};
use router_store::AdminError;
use router_store::experiments::StatusChange;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// One variant as the admin API takes it (`router_core::Variant`).
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct VariantJson {
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 64))]
    pub name: String,
    /// Relative share of the traffic, at least 1.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 10_000))]
    pub weight: u32,
    /// A system instruction the variant adds (or puts instead, `replace`).
    #[serde(default)]
    pub system: Option<String>,
    #[serde(default)]
    #[cfg_attr(
        feature = "openapi",
        schema(value_type = Option<String>, pattern = "^(prepend|replace)$")
    )]
    pub system_mode: Option<SystemMode>,
    /// Another model of the catalog, by ID or alias.
    #[serde(default)]
    pub model: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewExperiment {
    #[cfg_attr(feature = "openapi", schema(pattern = "^[A-Za-z0-9._-]{1,64}$"))]
    pub slug: String,
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 20))]
    pub variants: Vec<VariantJson>,
}

/// `PATCH /admin/accounts/{id}/experiments/{slug}`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ExperimentPatch {
    #[cfg_attr(
        feature = "openapi",
        schema(pattern = "^(running|paused|completed|promoted)$")
    )]
    pub status: String,
    #[serde(default)]
    pub winner: Option<String>,
}

/// An experiment with its variants and how many requests each was
/// assigned.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ExperimentView {
    pub id: Uuid,
    pub account_id: Uuid,
    pub slug: String,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub status: ExperimentStatus,
    /// The promoted variant's name.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub winner: Option<String>,
    pub variants: Vec<VariantView>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct VariantView {
    pub name: String,
    pub weight: u32,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub system: Option<String>,
    /// Set when `system` is.
    #[cfg_attr(feature = "openapi", schema(required, value_type = Option<String>))]
    pub system_mode: Option<SystemMode>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub model: Option<String>,
    /// Requests assigned this variant.
    pub assignments: i64,
}

impl ExperimentView {
    fn of(experiment: &Experiment, counts: &[(String, i64)]) -> Self {
        let variants = experiment
            .variants
            .iter()
            .map(|v| VariantView {
                name: v.name.clone(),
                weight: v.weight,
                system: v.system.clone(),
                system_mode: v.system.as_ref().map(|_| v.system_mode),
                model: v.model.clone(),
                assignments: counts
                    .iter()
                    .find(|(name, _)| *name == v.name)
                    .map_or(0, |(_, n)| *n),
            })
            .collect();
        ExperimentView {
            id: experiment.id,
            account_id: experiment.account_id,
            slug: experiment.slug.clone(),
            status: experiment.status,
            winner: experiment.winner.clone(),
            variants,
        }
    }
}

const MAX_VARIANTS: usize = 20;
const MAX_SYSTEM_CHARS: usize = 100_000;

/// A slug travels in a header (`X-CI-Experiment`): 1 to 64 letters,
/// digits, `.`, `_` or `-`.
fn valid_slug(slug: &str) -> bool {
    (1..=64).contains(&slug.len())
        && slug
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

fn parse_variants(catalog: &Catalog, variants: Vec<VariantJson>) -> Result<Vec<Variant>, Refusal> {
    if variants.is_empty() || variants.len() > MAX_VARIANTS {
        return Err(Refusal::VariantCount { max: MAX_VARIANTS });
    }
    let mut parsed: Vec<Variant> = Vec::with_capacity(variants.len());
    for (index, v) in variants.into_iter().enumerate() {
        if v.name.is_empty() || v.name.len() > 64 {
            return Err(Refusal::VariantName { index });
        }
        if parsed.iter().any(|p| p.name == v.name) {
            return Err(Refusal::DuplicateVariant {
                index,
                name: v.name,
            });
        }
        if v.weight == 0 || v.weight > 10_000 {
            return Err(Refusal::VariantWeight { index });
        }
        if v.system
            .as_ref()
            .is_some_and(|s| s.chars().count() > MAX_SYSTEM_CHARS)
        {
            return Err(Refusal::SystemTooLong {
                index,
                max: MAX_SYSTEM_CHARS,
            });
        }
        if v.system_mode.is_some() && v.system.is_none() {
            return Err(Refusal::SystemModeWithoutSystem { index });
        }
        if let Some(model) = &v.model {
            let text_model = catalog
                .model(model)
                .is_some_and(|m| m.modality == Modality::Text);
            if !text_model {
                return Err(Refusal::VariantModel {
                    index,
                    model: model.clone(),
                });
            }
        }
        parsed.push(Variant {
            name: v.name,
            weight: v.weight,
            system: v.system,
            system_mode: v.system_mode.unwrap_or_default(),
            model: v.model,
        });
    }
    Ok(parsed)
}

impl Operator {
    /// Creates a draft experiment; a slug the account already uses is
    /// [`Refusal::SlugTaken`]. A variant's model must be a text model of
    /// `catalog`.
    pub async fn create_experiment(
        &self,
        catalog: &Catalog,
        account_id: Uuid,
        new: NewExperiment,
    ) -> Result<ExperimentView, OperatorError> {
        if !valid_slug(&new.slug) {
            return Err(Refusal::Slug.into());
        }
        let variants = parse_variants(catalog, new.variants)?;
        let experiment = self
            .database
            .create_experiment(account_id, &new.slug, &variants)
            .await
            .map_err(|e| match e {
                AdminError::Conflict => Refusal::SlugTaken.into(),
                AdminError::AccountNotFound(_) => OperatorError::NotFound(Resource::Account),
                other => OperatorError::store(other),
            })?;
        Ok(ExperimentView::of(&experiment, &[]))
    }

    /// One experiment with its assignment counts per variant.
    pub async fn experiment(
        &self,
        account_id: Uuid,
        slug: &str,
    ) -> Result<ExperimentView, OperatorError> {
        let experiment = self
            .database
            .find_experiment(account_id, slug)
            .await
            .map_err(OperatorError::store)?
            .ok_or(OperatorError::NotFound(Resource::Experiment))?;
        self.counted(&experiment).await
    }

    /// The account's experiments, each with its assignment counts.
    pub async fn experiments(
        &self,
        account_id: Uuid,
    ) -> Result<List<ExperimentView>, OperatorError> {
        let experiments = self
            .database
            .list_experiments(account_id)
            .await
            .map_err(OperatorError::store)?;
        let mut data = Vec::with_capacity(experiments.len());
        for experiment in &experiments {
            data.push(self.counted(experiment).await?);
        }
        Ok(List::of(data))
    }

    /// Moves an experiment along draft → running ↔ paused → completed or
    /// promoted (with `winner`); any other move is [`Refusal::Transition`].
    pub async fn update_experiment(
        &self,
        account_id: Uuid,
        slug: &str,
        patch: ExperimentPatch,
    ) -> Result<ExperimentView, OperatorError> {
        let to = ExperimentStatus::parse(&patch.status)
            .filter(|s| *s != ExperimentStatus::Draft)
            .ok_or(Refusal::Status)?;
        match (to, &patch.winner) {
            (ExperimentStatus::Promoted, None) => return Err(Refusal::WinnerMissing.into()),
            (ExperimentStatus::Promoted, Some(_)) | (_, None) => {}
            (_, Some(_)) => return Err(Refusal::WinnerNotPromoting.into()),
        }
        if let Some(winner) = &patch.winner {
            let current = self
                .database
                .find_experiment(account_id, slug)
                .await
                .map_err(OperatorError::store)?
                .ok_or(OperatorError::NotFound(Resource::Experiment))?;
            if !current.variants.iter().any(|v| &v.name == winner) {
                return Err(Refusal::NoSuchWinner(winner.clone()).into());
            }
        }
        let change = self
            .database
            .set_experiment_status(account_id, slug, to, patch.winner.as_deref())
            .await
            .map_err(OperatorError::store)?;
        match change {
            StatusChange::Changed(experiment) => self.counted(&experiment).await,
            StatusChange::NotFound => Err(OperatorError::NotFound(Resource::Experiment)),
            StatusChange::Refused(from) => Err(Refusal::Transition { from, to }.into()),
        }
    }

    /// `experiment` with its assignment counts.
    async fn counted(&self, experiment: &Experiment) -> Result<ExperimentView, OperatorError> {
        let counts = self
            .database
            .experiment_assignments(experiment.id)
            .await
            .map_err(OperatorError::store)?;
        Ok(ExperimentView::of(experiment, &counts))
    }
}
