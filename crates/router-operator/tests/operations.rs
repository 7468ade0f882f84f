//! The operator's operations without HTTP, each against a fresh PostgreSQL
//! database: accounts and credits, keys and their policies, sessions,
//! experiments, and refusals with the client error each becomes.

// Helpers outside `#[test]` functions panic on failure like the tests do
// (clippy's allow-unwrap-in-tests covers only the test functions).
#![expect(clippy::unwrap_used)]

use router_canonical::{ApiError, ErrorCode};
use router_core::Catalog;
use router_operator::{
    ApiKeyPatch, Credits, ExperimentPatch, NewAccount, NewApiKey, NewExperiment, NewSession,
    Operator, OperatorError, Refusal, Resource, SpendLimitJson, VariantJson, from_json,
};
use router_store::test_support::TestDatabase;
use serde_json::json;
use std::time::Duration;
use uuid::Uuid;

const CATALOG: &str = r#"
[[suppliers]]
id = "supplier"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "SUPPLIER_KEY"

[[models]]
id = "m-text"
aliases = ["text-alias"]
pricing = "fixed"
rates = { input = 1_000_000_000, output = 2_000_000_000 }

[[routes]]
id = "text-primary"
model = "m-text"
supplier = "supplier"
upstream_model = "up-text"
protocol = "chat"
internal_cost = { input = 900_000_000, output = 900_000_000 }
"#;

fn catalog() -> Catalog {
    Catalog::from_toml(CATALOG, |_| Some("key".to_owned())).unwrap()
}

fn operator(db: &TestDatabase) -> Operator {
    Operator::new(db.database().clone(), Duration::from_secs(3600))
}

fn refusal(error: OperatorError) -> Refusal {
    match error {
        OperatorError::Refused(refusal) => refusal,
        other => panic!("not a refusal: {other:?}"),
    }
}

async fn account(operator: &Operator, email: &str) -> Uuid {
    let new = NewAccount {
        email: email.to_owned(),
        email_verified: true,
    };
    operator.create_account(new).await.unwrap().id
}

#[tokio::test]
async fn accounts_are_created_shown_and_credited() {
    let db = TestDatabase::new().await;
    let operator = operator(&db);
    let opened = operator
        .create_account(NewAccount {
            email: "ops@example.com".to_owned(),
            email_verified: false,
        })
        .await
        .unwrap();
    assert_eq!(opened.email, "ops@example.com");
    assert!(!opened.email_verified);
    assert_eq!(opened.balance_nano_usd, 0);

    let again = operator
        .create_account(NewAccount {
            email: "ops@example.com".to_owned(),
            email_verified: true,
        })
        .await
        .unwrap_err();
    assert_eq!(refusal(again), Refusal::EmailTaken);

    let credits = |amount_nano_usd| Credits { amount_nano_usd };
    let balance = operator
        .credit_account(opened.id, credits(12_500_000_000))
        .await
        .unwrap();
    assert_eq!(balance.account_id, opened.id);
    assert_eq!(balance.balance_nano_usd, 12_500_000_000);
    let balance = operator
        .credit_account(opened.id, credits(500))
        .await
        .unwrap();
    assert_eq!(balance.balance_nano_usd, 12_500_000_500);

    let shown = operator.account(opened.id).await.unwrap();
    assert_eq!(shown.balance_nano_usd, 12_500_000_500);
    assert_eq!(shown.held_nano_usd, 0);
    assert_eq!(shown.available_nano_usd, 12_500_000_500);
    assert_eq!(shown.shortfall_count, 0);
    // The view is the admin API's body.
    let body = serde_json::to_value(&shown).unwrap();
    assert_eq!(body["email"], "ops@example.com");
    assert_eq!(body["available_nano_usd"], 12_500_000_500_i64);

    let zero = operator
        .credit_account(opened.id, credits(0))
        .await
        .unwrap_err();
    assert_eq!(refusal(zero), Refusal::NonPositiveAmount);
    let unknown = Uuid::new_v4();
    assert!(matches!(
        operator.credit_account(unknown, credits(1)).await,
        Err(OperatorError::NotFound(Resource::Account))
    ));
    assert!(matches!(
        operator.account(unknown).await,
        Err(OperatorError::NotFound(Resource::Account))
    ));
}

#[tokio::test]
async fn keys_carry_their_policy_and_its_changes() {
    let db = TestDatabase::new().await;
    let operator = operator(&db);
    let catalog = catalog();
    let owner = account(&operator, "keys@example.com").await;

    let issued = operator
        .create_api_key(
            &catalog,
            NewApiKey {
                account_id: owner,
                scopes: vec!["inference".to_owned(), "usage:read".to_owned()],
                allowed_models: Some(vec!["text-alias".to_owned()]),
                ip_allowlist: Some(vec!["10.1.2.3/8".to_owned(), "::1".to_owned()]),
                prompt_cache_mode: Some("off".to_owned()),
                spend_limits: Some(vec![SpendLimitJson {
                    amount_nano_usd: 5000,
                    window_seconds: 3600,
                }]),
                requests_per_minute: Some(60),
                ..NewApiKey::default()
            },
        )
        .await
        .unwrap();
    assert!(issued.key.starts_with(&issued.prefix));
    assert!(
        !format!("{issued:?}").contains(&issued.key),
        "Debug redacts"
    );
    assert_eq!(issued.account_id, owner);
    assert_eq!(issued.scopes, ["inference", "usage:read"]);
    let policy = serde_json::to_value(&issued.policy).unwrap();
    assert_eq!(
        policy,
        json!({
            "allowed_models": ["text-alias"],
            "ip_allowlist": ["10.0.0.0/8", "::1/128"],
            "prompt_cache_mode": "off",
            "response_cache_ttl_seconds": null,
            "spend_limits": [{"amount_nano_usd": 5000, "window_seconds": 3600}],
            "monthly_budget_nano_usd": null,
            "requests_per_minute": 60,
            "requests_per_day": null,
            "max_concurrent_requests": null,
            "version": 0,
        })
    );

    let shown = operator.api_key(issued.id).await.unwrap();
    assert_eq!(shown.key.prefix, issued.prefix);
    assert_eq!(shown.spend.month_to_date_nano_usd, 0);
    assert_eq!(shown.spend.windows.len(), 1);
    assert_eq!(shown.spend.windows[0].window_seconds, 3600);
    let body = serde_json::to_value(&shown).unwrap();
    assert_eq!(body["id"], json!(issued.id), "the key's fields at the top");
    assert_eq!(body["spend"]["held_nano_usd"], 0);

    // Present and null clears; absent keeps.
    let patch: ApiKeyPatch =
        from_json(json!({"allowed_models": null, "requests_per_day": 1000})).unwrap();
    let changed = operator
        .update_api_key(&catalog, issued.id, patch)
        .await
        .unwrap();
    assert_eq!(changed.policy.allowed_models, None);
    assert_eq!(changed.policy.requests_per_day, Some(1000));
    assert_eq!(changed.policy.requests_per_minute, Some(60));
    assert!(changed.policy.version > 0, "a change bumps the version");

    let listed = operator.api_keys(owner).await.unwrap();
    assert_eq!(listed.object, "list");
    assert_eq!(listed.data.len(), 1);
    operator.delete_api_key(issued.id).await.unwrap();
    let listed = operator.api_keys(owner).await.unwrap();
    assert!(listed.data[0].deleted_at.is_some());
    assert!(matches!(
        operator.delete_api_key(issued.id).await,
        Err(OperatorError::NotFound(Resource::ApiKey))
    ));
}

#[tokio::test]
async fn refusals_name_the_field_and_write_nothing() {
    let db = TestDatabase::new().await;
    let operator = operator(&db);
    let catalog = catalog();
    let owner = account(&operator, "refused@example.com").await;
    let key = |allowed_models: Vec<&str>| NewApiKey {
        account_id: owner,
        scopes: vec!["inference".to_owned()],
        allowed_models: Some(allowed_models.into_iter().map(str::to_owned).collect()),
        ..NewApiKey::default()
    };

    let typo = operator
        .create_api_key(&catalog, key(vec!["m-text", "m-txet"]))
        .await
        .unwrap_err();
    let error = ApiError::from(typo);
    assert_eq!(error.code, ErrorCode::InvalidParameter);
    assert_eq!(error.param.as_deref(), Some("allowed_models[1]"));
    assert_eq!(error.message, "No model or alias `m-txet` in the catalog.");
    assert!(operator.api_keys(owner).await.unwrap().data.is_empty());

    let stranger = NewApiKey {
        account_id: Uuid::new_v4(),
        ..key(vec![])
    };
    let error = operator
        .create_api_key(&catalog, stranger)
        .await
        .unwrap_err();
    assert_eq!(refusal(error), Refusal::NoSuchAccountId);

    // An unknown field is refused, never dropped.
    let error = from_json::<NewApiKey>(json!({
        "account_id": owner,
        "scopes": ["inference"],
        "alowed_models": ["m-text"],
    }))
    .unwrap_err();
    let error = ApiError::from(error);
    assert_eq!(error.code, ErrorCode::InvalidParameter);
    assert_eq!(error.param.as_deref(), Some("alowed_models"));
    let error = ApiError::from(from_json::<NewAccount>(json!([])).unwrap_err());
    assert_eq!(error.param.as_deref(), Some("body"));

    let error = operator
        .create_session(
            owner,
            NewSession {
                ttl_seconds: Some(0),
            },
        )
        .await
        .unwrap_err();
    assert_eq!(ApiError::from(error).param.as_deref(), Some("ttl_seconds"));
}

#[tokio::test]
async fn sessions_open_and_end() {
    let db = TestDatabase::new().await;
    let operator = operator(&db);
    let owner = account(&operator, "session@example.com").await;
    let opened = operator
        .create_session(owner, NewSession::default())
        .await
        .unwrap();
    assert_eq!(opened.cookie_name, router_operator::COOKIE_NAME);
    assert_eq!(opened.cookie_value.len(), 64);
    assert!(!format!("{opened:?}").contains(&opened.cookie_value));
    let found = db.find_session(&opened.cookie_value).await.unwrap();
    assert_eq!(found.unwrap().account_id, owner);
    operator.revoke_session(opened.id).await.unwrap();
    assert!(matches!(
        operator.revoke_session(opened.id).await,
        Err(OperatorError::NotFound(Resource::Session))
    ));
    assert!(matches!(
        operator
            .create_session(Uuid::new_v4(), NewSession::default())
            .await,
        Err(OperatorError::NotFound(Resource::Account))
    ));
}

#[tokio::test]
async fn a_sign_in_link_is_spent_once_into_a_session() {
    let db = TestDatabase::new().await;
    let operator = operator(&db);
    let owner = account(&operator, "Link@example.com").await;
    assert!(
        operator
            .issue_sign_in_link("nobody@example.com")
            .await
            .unwrap()
            .is_none()
    );
    let link = operator
        .issue_sign_in_link("link@example.com")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(link.email, "Link@example.com");
    assert!(!format!("{link:?}").contains(&link.token));
    // A second link within the resend gap is not sent.
    assert!(
        operator
            .issue_sign_in_link("link@example.com")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        operator
            .redeem_sign_in_link("<script>")
            .await
            .unwrap()
            .is_none()
    );
    let session = operator
        .redeem_sign_in_link(&link.token)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(session.account_id, owner);
    assert!(
        operator
            .redeem_sign_in_link(&link.token)
            .await
            .unwrap()
            .is_none()
    );
    let found = operator
        .find_session(&session.token)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.id, session.id);
    operator.sign_out(session.id).await.unwrap();
    assert!(
        operator
            .find_session(&session.token)
            .await
            .unwrap()
            .is_none()
    );
    // Signing out twice is no error.
    operator.sign_out(session.id).await.unwrap();
}

#[tokio::test]
async fn the_data_protection_switch_is_read_and_set() {
    // J-01, J-05: off by default; setting it is idempotent.
    let db = TestDatabase::new().await;
    let operator = operator(&db);
    let owner = account(&operator, "zdr@example.com").await;
    let session = operator
        .create_session(owner, NewSession::default())
        .await
        .unwrap();
    assert!(!operator.zero_data_retention(owner).await.unwrap());
    for _ in 0..2 {
        assert!(
            operator
                .set_zero_data_retention(owner, session.id, true)
                .await
                .unwrap()
        );
    }
    assert!(operator.zero_data_retention(owner).await.unwrap());
    assert!(matches!(
        operator.zero_data_retention(Uuid::new_v4()).await,
        Err(OperatorError::NotFound(Resource::Account))
    ));
}

#[tokio::test]
async fn experiments_move_through_their_statuses() {
    let db = TestDatabase::new().await;
    let operator = operator(&db);
    let catalog = catalog();
    let owner = account(&operator, "ab@example.com").await;
    let variant = |name: &str, model: Option<&str>| VariantJson {
        name: name.to_owned(),
        weight: 1,
        system: None,
        system_mode: None,
        model: model.map(str::to_owned),
    };
    let new = |slug: &str, variants| NewExperiment {
        slug: slug.to_owned(),
        variants,
    };

    let error = operator
        .create_experiment(
            &catalog,
            owner,
            new("exp", vec![variant("a", None), variant("b", Some("nope"))]),
        )
        .await
        .unwrap_err();
    assert_eq!(
        refusal(error),
        Refusal::VariantModel {
            index: 1,
            model: "nope".to_owned()
        }
    );
    let draft = operator
        .create_experiment(
            &catalog,
            owner,
            new(
                "exp",
                vec![variant("a", None), variant("b", Some("m-text"))],
            ),
        )
        .await
        .unwrap();
    assert_eq!(draft.status, router_core::ExperimentStatus::Draft);
    let taken = operator
        .create_experiment(&catalog, owner, new("exp", vec![variant("a", None)]))
        .await
        .unwrap_err();
    assert_eq!(refusal(taken), Refusal::SlugTaken);

    let patch = |status: &str, winner: Option<&str>| ExperimentPatch {
        status: status.to_owned(),
        winner: winner.map(str::to_owned),
    };
    let running = operator
        .update_experiment(owner, "exp", patch("running", None))
        .await
        .unwrap();
    assert_eq!(running.status, router_core::ExperimentStatus::Running);
    let error = operator
        .update_experiment(owner, "exp", patch("promoted", Some("c")))
        .await
        .unwrap_err();
    assert_eq!(refusal(error), Refusal::NoSuchWinner("c".to_owned()));
    let promoted = operator
        .update_experiment(owner, "exp", patch("promoted", Some("b")))
        .await
        .unwrap();
    assert_eq!(promoted.winner.as_deref(), Some("b"));
    let error = operator
        .update_experiment(owner, "exp", patch("running", None))
        .await
        .unwrap_err();
    let error = ApiError::from(error);
    assert_eq!(error.code, ErrorCode::Conflict);
    assert_eq!(
        error.message,
        "An experiment that is promoted cannot become running."
    );

    let listed = operator.experiments(owner).await.unwrap();
    assert_eq!(listed.data.len(), 1);
    assert_eq!(listed.data[0].variants[1].assignments, 0);
    assert!(matches!(
        operator.experiment(owner, "other").await,
        Err(OperatorError::NotFound(Resource::Experiment))
    ));
}
