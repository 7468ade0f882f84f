//! The catalog wing without HTTP: releases recorded, reloaded and followed
//! by a second instance, the pricing feed's pages and cursors, against a
//! fresh PostgreSQL database per test (`DATABASE_URL`); and the supply and
//! compare rules over parameters as the edge hands them.

// Helpers outside `#[test]` functions panic on failure like the tests do
// (clippy's allow-unwrap-in-tests covers only the test functions).
#![expect(clippy::unwrap_used)]

use router_canonical::{ApiError, ErrorCode};
use router_catalog::models::{self, CompareQuery, SupplyQuery};
use router_catalog::{
    CatalogEnv, CatalogError, CatalogViews, ChangesQuery, Params, PublishedCatalog, ReleaseInfo,
    ServesCatalog, Viewer,
};
use router_core::product_codes;
use router_core::{Catalog, KeyPolicy};
use router_store::test_support::TestDatabase;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use uuid::Uuid;

/// A catalog of three text models; `m-text` costs `input` per million
/// input tokens.
fn catalog_text(input: i64) -> String {
    format!(
        r#"
[[suppliers]]
id = "hidden-supplier"
base_url = "http://127.0.0.1:9"
api_key_env = "WING_TEST_KEY"

[[models]]
id = "m-text"
aliases = ["text-alias"]
pricing = "fixed"
rates = {{ input = {input}, output = 2_000_000_000 }}

[[models]]
id = "m-supply"
pricing = "supply"
list_price = {{ input = 2_000_000_000, output = 2_000_000_000 }}

[[models]]
id = "m-other"
pricing = "fixed"
rates = {{ input = 1, output = 1 }}

[[routes]]
id = "text-route"
model = "m-text"
supplier = "hidden-supplier"
upstream_model = "up-text"
protocol = "chat"
priority = 10
internal_cost = {{ input = 1, output = 1 }}

[[routes]]
id = "supply-cheap"
model = "m-supply"
supplier = "hidden-supplier"
upstream_model = "up-cheap"
protocol = "chat"
priority = 1
internal_cost = {{ input = 1, output = 1 }}
quote = {{ input = 1_000_000_000, output = 1_000_000_000 }}

[[routes]]
id = "supply-zdr"
model = "m-supply"
supplier = "hidden-supplier"
upstream_model = "up-zdr"
protocol = "chat"
priority = 1
zdr = true
internal_cost = {{ input = 1, output = 1 }}
quote = {{ input = 1_900_000_000, output = 1_900_000_000 }}

[[routes]]
id = "other-route"
model = "m-other"
supplier = "hidden-supplier"
upstream_model = "up-other"
protocol = "chat"
internal_cost = {{ input = 1, output = 1 }}
"#
    )
}

fn env() -> CatalogEnv {
    Arc::new(|_| Some("supplier-key".to_owned()))
}

fn parse(text: &str) -> Arc<Catalog> {
    let env = env();
    Arc::new(Catalog::parse(text, "wing.toml", |n| env(n)).unwrap())
}

/// What the gateway would be handed: the input price of `m-text` in each
/// catalog installed.
#[derive(Clone, Default)]
struct Routing(Arc<Mutex<Vec<Value>>>);

impl ServesCatalog for Routing {
    fn serve(&self, catalog: Arc<Catalog>) {
        let views = CatalogViews::build(catalog, ReleaseInfo::default());
        let price = text_price(&views);
        self.0.lock().unwrap().push(price);
    }
}

impl Routing {
    fn served(&self) -> Vec<Value> {
        self.0.lock().unwrap().clone()
    }
}

/// `m-text`'s input price in a listing without a model policy.
fn text_price(views: &CatalogViews) -> Value {
    let listing: Value = serde_json::from_slice(&views.listing(&KeyPolicy::default())).unwrap();
    listing["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "m-text")
        .unwrap()["pricing"]["input_usd_per_mtok"]
        .clone()
}

/// A catalog file of its own.
struct CatalogFile(PathBuf);

impl CatalogFile {
    fn new(text: &str) -> CatalogFile {
        let path =
            std::env::temp_dir().join(format!("router-catalog-wing-{}.toml", Uuid::new_v4()));
        std::fs::write(&path, text).unwrap();
        CatalogFile(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }

    fn write(&self, text: &str) {
        std::fs::write(&self.0, text).unwrap();
    }
}

impl Drop for CatalogFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// One router process's catalog, started as `router serve` starts it: the
/// file recorded as a release.
async fn instance(db: &TestDatabase, file: &CatalogFile) -> (PublishedCatalog, Routing) {
    let text = std::fs::read_to_string(&file.0).unwrap();
    let (views, _) = router_catalog::record(db, parse(&text), file.path(), &text)
        .await
        .unwrap();
    let routing = Routing::default();
    let published =
        PublishedCatalog::new(views, file.path(), env(), (**db).clone(), routing.clone());
    (published, routing)
}

/// Decoded parameters as the edge hands them: repeated names are
/// unreadable, as in a query string.
struct Pairs<'a>(&'a [(&'a str, &'a str)]);

impl Params for Pairs<'_> {
    fn one(&self, name: &str) -> Result<Option<&str>, CatalogError> {
        let mut values = self.0.iter().filter(|(n, _)| *n == name);
        let first = values.next().map(|(_, v)| *v);
        if values.next().is_some() {
            return Err(CatalogError::UnreadableParam {
                param: name.to_owned(),
            });
        }
        Ok(first)
    }
}

fn api(error: CatalogError) -> ApiError {
    error.into()
}

#[tokio::test]
async fn a_reload_is_recorded_served_and_followed_by_another_instance() {
    let db = TestDatabase::new().await;
    let file = CatalogFile::new(&catalog_text(1_000_000_000));
    let (first, first_routing) = instance(&db, &file).await;
    let (second, second_routing) = instance(&db, &file).await;
    let start = first.current().info.release;
    assert_eq!(
        second.current().info.release,
        start,
        "one text, one release"
    );
    second.spawn_follower();

    file.write(&catalog_text(3_000_000_000));
    let reloaded = first.reload().await.unwrap();
    assert_eq!(reloaded.release, start + 1);
    assert_eq!(reloaded.changed, 1, "only m-text's price changed");
    assert_eq!(reloaded.pricing_version, first.current().pricing_version());
    assert_eq!(first.describe().release, reloaded.release);
    assert_eq!(first.describe().path, file.path());
    assert_eq!(first.describe().models, 3);
    assert_eq!(text_price(&first.current()), json!(3));
    assert_eq!(first_routing.served(), [json!(3)], "the gateway swaps too");

    // The other instance hears of it (NOTIFY) and serves the same release.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while second.current().info.release < reloaded.release {
        assert!(tokio::time::Instant::now() < deadline, "never adopted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(text_price(&second.current()), json!(3));
    assert_eq!(second.current().pricing_version(), reloaded.pricing_version);
    assert_eq!(second_routing.served(), [json!(3)]);
    assert!(
        second
            .current()
            .info
            .price_changed_at
            .contains_key("m-text"),
        "the release knows when m-text's price changed"
    );

    // An unchanged file keeps its release.
    let again = first.reload().await.unwrap();
    assert_eq!((again.release, again.changed), (reloaded.release, 0));

    // A release older than the one in force is never installed.
    let stale = CatalogViews::build(
        parse(&catalog_text(1_000_000_000)),
        ReleaseInfo {
            release: start,
            ..ReleaseInfo::default()
        },
    );
    assert!(!second.install(stale));
    assert_eq!(text_price(&second.current()), json!(3));
}

#[tokio::test]
async fn an_invalid_catalog_is_refused_and_the_old_one_keeps_serving() {
    let db = TestDatabase::new().await;
    let file = CatalogFile::new(&catalog_text(1_000_000_000));
    let (published, routing) = instance(&db, &file).await;
    let release = published.current().info.release;

    file.write("[[models]]\nid = \"broken\"\npricing = \"nonsense\"\n");
    let error = published.reload().await.unwrap_err();
    assert!(matches!(error, CatalogError::Invalid(_)), "{error:?}");
    let error = api(error);
    assert_eq!(error.code, ErrorCode::InvalidParameter);
    assert!(error.message.contains(file.path()), "{}", error.message);

    let gone = CatalogFile::new("");
    let path = gone.path().to_owned();
    drop(gone);
    let unreadable = PublishedCatalog::new(
        CatalogViews::build(parse(&catalog_text(1)), ReleaseInfo::default()),
        path.clone(),
        env(),
        (*db).clone(),
        Routing::default(),
    );
    let error = unreadable.reload().await.unwrap_err();
    assert!(
        matches!(error, CatalogError::Unreadable { .. }),
        "{error:?}"
    );
    assert!(
        api(error)
            .message
            .starts_with(&format!("cannot read catalog {path}: "))
    );

    assert_eq!(published.current().info.release, release);
    assert_eq!(text_price(&published.current()), json!(1));
    assert!(routing.served().is_empty());
}

/// A page of the feed as a viewer asks for it.
async fn page(
    published: &PublishedCatalog,
    viewer: &Viewer,
    pairs: &[(&str, &str)],
) -> Result<Value, CatalogError> {
    let query = ChangesQuery::read(&Pairs(pairs))?;
    published.pricing_changes(viewer, &query).await
}

#[tokio::test]
async fn feed_pages_are_frozen_at_their_release_and_bound_to_their_viewer() {
    let db = TestDatabase::new().await;
    let file = CatalogFile::new(&catalog_text(1_000_000_000));
    let (published, _) = instance(&db, &file).await;
    let viewer = Viewer::Session(Uuid::new_v4());
    let since = "2000-01-01T00:00:00Z";

    let first = page(&published, &viewer, &[("since", since), ("limit", "2")])
        .await
        .unwrap();
    assert_eq!(first["data"].as_array().unwrap().len(), 2, "{first}");
    assert_eq!(first["source"], "configured_catalog");
    let cursor = first["next_cursor"].as_str().unwrap().to_owned();

    // A reload meanwhile changes nothing for the pages already begun (L-25).
    file.write(&catalog_text(3_000_000_000));
    published.reload().await.unwrap();

    let rest = page(
        &published,
        &viewer,
        &[("since", since), ("limit", "2"), ("cursor", &cursor)],
    )
    .await
    .unwrap();
    let mut seen: Vec<Value> = first["data"].as_array().unwrap().clone();
    seen.extend(rest["data"].as_array().unwrap().iter().cloned());
    let models: Vec<&str> = seen
        .iter()
        .map(|c| c["model_id"].as_str().unwrap())
        .collect();
    assert_eq!(models.len(), 3, "{seen:?}");
    for model in ["m-text", "m-supply", "m-other"] {
        assert!(models.contains(&model), "{models:?}");
    }
    assert!(rest["next_cursor"].is_null());
    let text = seen.iter().find(|c| c["model_id"] == "m-text").unwrap();
    assert_eq!(text["current"]["input_usd_per_mtok"], json!(1), "{text}");

    // A fresh first page reads the new release.
    let fresh = page(&published, &viewer, &[("since", since)])
        .await
        .unwrap();
    let text = fresh["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["model_id"] == "m-text")
        .unwrap();
    assert_eq!(text["current"]["input_usd_per_mtok"], json!(3), "{text}");

    // The cursor is bound to its `since` and its viewer (L-24).
    let other_since = page(
        &published,
        &viewer,
        &[("since", "2000-01-02T00:00:00Z"), ("cursor", &cursor)],
    )
    .await;
    assert!(matches!(other_since, Err(CatalogError::Cursor)));
    let other_viewer = page(
        &published,
        &Viewer::Session(Uuid::new_v4()),
        &[("since", since), ("cursor", &cursor)],
    )
    .await;
    assert!(matches!(other_viewer, Err(CatalogError::Cursor)));

    // Another instance of the deployment reads the same key from the database.
    let (second, _) = instance(&db, &file).await;
    let again = page(
        &second,
        &viewer,
        &[("since", since), ("limit", "2"), ("cursor", &cursor)],
    )
    .await
    .unwrap();
    assert_eq!(again["data"], rest["data"]);
}

#[test]
fn feed_parameters_are_read_in_order() {
    let read = |pairs: &[(&str, &str)]| ChangesQuery::read(&Pairs(pairs)).map(|q| q.limit);
    assert!(matches!(
        read(&[("limit", "0")]),
        Err(CatalogError::Required { param: "since" })
    ));
    assert!(matches!(
        read(&[("since", "2025-01-01 00:00:00Z")]),
        Err(CatalogError::Since)
    ));
    assert!(matches!(
        read(&[("since", "2025-01-01T00:00:00Z"), ("limit", "101")]),
        Err(CatalogError::Limit)
    ));
    assert!(matches!(
        read(&[("since", "2025-01-01T00:00:00Z")]),
        Ok(100)
    ));
    let long = "a".repeat(2049);
    assert!(matches!(
        read(&[("since", "2025-01-01T00:00:00Z"), ("cursor", &long)]),
        Err(CatalogError::Cursor)
    ));
    assert_eq!(
        api(read(&[("since", "x"), ("since", "y")]).unwrap_err())
            .param
            .as_deref(),
        Some("since")
    );
}

#[test]
fn supply_is_filtered_and_numbered_without_naming_routes() {
    let views = CatalogViews::build(parse(&catalog_text(1)), ReleaseInfo::default());
    let policy = KeyPolicy::default();
    let supply = |pairs: &[(&str, &str)]| {
        SupplyQuery::read(&Pairs(pairs)).and_then(|q| models::supply(&views, &policy, &q))
    };
    let all = supply(&[("model", "m-supply")]).unwrap();
    let ordinals: Vec<&str> = all["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["supply"].as_str().unwrap())
        .collect();
    assert_eq!(ordinals, ["s1", "s2"]);
    assert_eq!(
        all["data"][0]["input_usd_per_mtok"],
        json!(1),
        "cheapest first"
    );
    assert_eq!(all["data"][0]["input_discount_percent"], json!(50.0));
    assert!(
        !all.to_string().contains("supply-cheap"),
        "no route is named"
    );

    let zdr = supply(&[("model", "m-supply"), ("zdr", "true")]).unwrap();
    assert_eq!(zdr["data"].as_array().unwrap().len(), 1);
    let floor = supply(&[("model", "m-supply"), ("min_discount_percent", "10")]).unwrap();
    assert_eq!(
        floor["data"].as_array().unwrap().len(),
        1,
        "5 % off is not 10 %"
    );

    assert!(matches!(
        supply(&[]),
        Err(CatalogError::Required { param: "model" })
    ));
    assert!(matches!(
        supply(&[("model", "nope"), ("zdr", "yes")]),
        Err(CatalogError::ZdrFlag)
    ));
    assert!(matches!(
        supply(&[("model", "nope")]),
        Err(CatalogError::ModelNotFound { .. })
    ));
    assert!(matches!(
        supply(&[("model", "m-text"), ("min_discount_percent", "1")]),
        Err(CatalogError::ListPriceUnknown)
    ));
    let narrow = KeyPolicy {
        allowed_models: Some(vec!["m-other".to_owned()]),
        ..KeyPolicy::default()
    };
    let refused = models::supply(
        &views,
        &narrow,
        &SupplyQuery::read(&Pairs(&[("model", "text-alias")])).unwrap(),
    )
    .unwrap_err();
    assert_eq!(api(refused).code, product_codes::MODEL_NOT_ALLOWED);
}

#[test]
fn compare_ranks_priced_models_then_unpriced_then_unknown() {
    let views = CatalogViews::build(parse(&catalog_text(1_000_000_000)), ReleaseInfo::default());
    let viewer = Viewer::Session(Uuid::new_v4());
    let compare = |pairs: &[(&str, &str)]| {
        CompareQuery::read(&Pairs(pairs)).and_then(|q| models::compare(&views, &viewer, &q))
    };
    let body = compare(&[
        ("models", "nope,text-alias,m-other,text-alias"),
        ("prompt_tokens", "1000000"),
        ("requests", "2"),
    ])
    .unwrap();
    let order: Vec<&str> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["model"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["m-other", "text-alias", "nope"], "{body}");
    assert_eq!(body["data"][1]["id"], "m-text");
    assert_eq!(body["data"][1]["billed_nano_usd"], json!(2_000_000_000));
    assert_eq!(body["data"][2]["found"], json!(false));

    let many: Vec<String> = (0..11).map(|i| format!("m{i}")).collect();
    let many = many.join(",");
    assert!(matches!(
        compare(&[("models", &many), ("prompt_tokens", "x")]),
        Err(CatalogError::TooManyModels { max: 10 })
    ));
    assert!(matches!(
        compare(&[("models", "a,,b")]),
        Err(CatalogError::EmptyModelName)
    ));
    assert!(matches!(
        compare(&[("models", "a"), ("requests", "0")]),
        Err(CatalogError::Count {
            param: "requests",
            ..
        })
    ));
}

#[test]
fn public_views_filter_on_the_literal_true_only() {
    let views = CatalogViews::build(parse(&catalog_text(1)), ReleaseInfo::default());
    let ids = |zdr: bool| -> Vec<String> {
        let list: Value = serde_json::from_slice(&views.public_list(zdr).body).unwrap();
        list["models"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids(false), ["m-text", "m-supply", "m-other"]);
    assert_eq!(ids(true), ["m-supply"]);
    assert!(models::public_zdr(&Pairs(&[("zdr", "true")])));
    assert!(!models::public_zdr(&Pairs(&[("zdr", "TRUE")])));
    assert!(!models::public_zdr(&Pairs(&[
        ("zdr", "true"),
        ("zdr", "true")
    ])));

    let alias = models::public_model(&views, "text-alias", false).unwrap();
    let entry: Value = serde_json::from_slice(&alias.body).unwrap();
    assert_eq!(entry["id"], "m-text");
    assert!(matches!(
        models::public_model(&views, "text-alias", true),
        Err(CatalogError::PublicModelNotFound)
    ));
    assert_eq!(
        api(CatalogError::PublicModelNotFound).code,
        ErrorCode::NotFound
    );
}
