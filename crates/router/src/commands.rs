//! The operator's commands: accounts, keys and requests straight against
//! the database, through the same operations as the admin API (the
//! operator wing, `router_operator::Operator`); and checks of a catalog
//! file and of the whole configuration.

use crate::checks;
use crate::config::ServerConfig;
use crate::output::{Output, field, parse_usd, usd};
use crate::serve::{app, load_catalog};
use crate::settings::ServeArgs;
use anyhow::{Context, anyhow, bail};
use clap::{Args, Subcommand};
use router_canonical::ApiError;
use router_core::Catalog;
use router_operator::{Credits, NewAccount, NewApiKey, NewSession, Operator, SpendLimitJson};
use router_server::App;
use router_store::Database;
use serde_json::{Value, json};
use uuid::Uuid;

#[derive(Subcommand, Debug)]
pub(crate) enum AccountsCommand {
    /// Create an account with an empty wallet.
    Create {
        #[arg(long)]
        email: String,
        /// Mark the email as verified.
        #[arg(long)]
        verified: bool,
    },
    /// List accounts and their wallets, newest first.
    List {
        /// At most this many (1 to 1000).
        #[arg(long, default_value_t = 100)]
        limit: u32,
        /// The next page: accounts created before this one.
        #[arg(long)]
        before: Option<String>,
    },
    /// Show an account and its wallet.
    Show { id: String },
    /// Add credit to an account's wallet.
    Credit {
        id: String,
        /// Exact USD, e.g. 12.50 (at most nine decimals).
        #[arg(long, conflicts_with = "amount_nano_usd")]
        usd: Option<String>,
        /// Integer nano-USD.
        #[arg(long)]
        amount_nano_usd: Option<i64>,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum KeysCommand {
    /// Issue an API key; the secret is printed once.
    Create(KeyCreate),
    /// List an account's keys.
    List {
        #[arg(long)]
        account: String,
    },
    /// Show a key, its policy and what it has spent.
    Show { id: String },
    /// Change a key's scopes, expiry or policy (only what is given); at
    /// once on every instance.
    Update(KeyUpdate),
    /// Revoke (delete) a key at once.
    Revoke { id: String },
}

#[derive(Args, Debug)]
pub(crate) struct KeyCreate {
    #[arg(long)]
    account: String,
    /// inference, account:read, account:write, usage:read (repeatable).
    #[arg(long = "scope")]
    scopes: Vec<String>,
    #[command(flatten)]
    policy: KeyPolicyArgs,
}

/// The expiry and policy flags `keys create` and `keys update` share.
#[derive(Args, Debug)]
pub(crate) struct KeyPolicyArgs {
    /// Unix seconds.
    #[arg(long)]
    expires_at: Option<u64>,
    /// A model ID or alias the key may use (repeatable; none: every model).
    #[arg(long = "allowed-model")]
    allowed_models: Vec<String>,
    /// An address or CIDR the key may be used from (repeatable).
    #[arg(long = "ip")]
    ip_allowlist: Vec<String>,
    /// on, off or passthrough.
    #[arg(long)]
    prompt_cache_mode: Option<String>,
    /// Opt in to the exact-response cache: answers kept this long (1 to 86400).
    #[arg(long)]
    response_cache_ttl_seconds: Option<u64>,
    /// A rolling spend limit, AMOUNT_NANO_USD/WINDOW_SECONDS (repeatable).
    #[arg(long = "spend-limit")]
    spend_limits: Vec<String>,
    #[arg(long)]
    monthly_budget_nano_usd: Option<u64>,
    #[arg(long)]
    requests_per_minute: Option<u64>,
    #[arg(long)]
    requests_per_day: Option<u64>,
    #[arg(long)]
    max_concurrent_requests: Option<u64>,
}

/// `router keys update ID`: each flag given replaces that part of the
/// key; `--clear NAME` removes one (`expires_at`, `allowed_models`,
/// `ip_allowlist`, `prompt_cache_mode`, `response_cache_ttl_seconds`,
/// `spend_limits`, `monthly_budget_nano_usd`, `requests_per_minute`,
/// `requests_per_day`, `max_concurrent_requests`).
#[derive(Args, Debug)]
pub(crate) struct KeyUpdate {
    id: String,
    /// The key's scopes, all of them (repeatable).
    #[arg(long = "scope")]
    scopes: Vec<String>,
    #[command(flatten)]
    policy: KeyPolicyArgs,
    /// Remove a part of the policy or the expiry (repeatable).
    #[arg(long = "clear", value_parser = CLEARABLE)]
    clear: Vec<String>,
}

/// What `keys update --clear` removes.
const CLEARABLE: [&str; 10] = [
    "expires_at",
    "allowed_models",
    "ip_allowlist",
    "prompt_cache_mode",
    "response_cache_ttl_seconds",
    "spend_limits",
    "monthly_budget_nano_usd",
    "requests_per_minute",
    "requests_per_day",
    "max_concurrent_requests",
];

/// The admin API's PATCH body of `update`: a part given is set, a part
/// cleared is `null`, the rest absent (unchanged).
fn key_patch(update: KeyUpdate) -> anyhow::Result<router_operator::ApiKeyPatch> {
    let mut body = serde_json::Map::new();
    let mut set = |name: &str, value: Value| {
        body.insert(name.to_owned(), value);
    };
    if !update.scopes.is_empty() {
        set("scopes", json!(update.scopes));
    }
    if let Some(at) = update.policy.expires_at {
        set("expires_at", json!(at));
    }
    if !update.policy.allowed_models.is_empty() {
        set("allowed_models", json!(update.policy.allowed_models));
    }
    if !update.policy.ip_allowlist.is_empty() {
        set("ip_allowlist", json!(update.policy.ip_allowlist));
    }
    if let Some(mode) = update.policy.prompt_cache_mode {
        set("prompt_cache_mode", json!(mode));
    }
    if let Some(ttl) = update.policy.response_cache_ttl_seconds {
        set("response_cache_ttl_seconds", json!(ttl));
    }
    if !update.policy.spend_limits.is_empty() {
        let limits: Vec<Value> = update
            .policy
            .spend_limits
            .iter()
            .map(|text| {
                spend_limit(text).map(|l| {
                    json!({"amount_nano_usd": l.amount_nano_usd, "window_seconds": l.window_seconds})
                })
            })
            .collect::<anyhow::Result<_>>()?;
        set("spend_limits", Value::Array(limits));
    }
    for (name, value) in [
        (
            "monthly_budget_nano_usd",
            update.policy.monthly_budget_nano_usd,
        ),
        ("requests_per_minute", update.policy.requests_per_minute),
        ("requests_per_day", update.policy.requests_per_day),
        (
            "max_concurrent_requests",
            update.policy.max_concurrent_requests,
        ),
    ] {
        if let Some(value) = value {
            set(name, json!(value));
        }
    }
    for name in &update.clear {
        if body.contains_key(name) {
            bail!("--clear {name}: the same update also sets it");
        }
        body.insert(name.clone(), Value::Null);
    }
    if body.is_empty() {
        bail!("nothing to update: give a flag to set (e.g. --scope) or --clear NAME");
    }
    serde_json::from_value(Value::Object(body)).map_err(|e| anyhow!("{e}"))
}

#[derive(Subcommand, Debug)]
pub(crate) enum SessionsCommand {
    /// Open a browser session for an account; the cookie is printed once.
    Create {
        account: String,
        /// Lifetime in seconds (default ROUTER_SESSION_TTL_SECS).
        #[arg(long)]
        ttl_seconds: Option<u64>,
    },
    /// End a session at once.
    Revoke { id: String },
}

#[derive(Subcommand, Debug)]
pub(crate) enum RequestsCommand {
    /// Show a request's history: charge, attempts, ledger.
    Show { id: String },
}

#[derive(Subcommand, Debug)]
pub(crate) enum VideosCommand {
    /// Show a video job as the operator sees it (status, task, supplier text).
    Show { id: String },
    /// Reconcile an `unknown` job: `--task-id` (the supplier has it: polling
    /// resumes) or `--failed REASON` (it never took it: the hold is released).
    Reconcile {
        id: String,
        #[arg(long, conflicts_with = "failed")]
        task_id: Option<String>,
        #[arg(long)]
        failed: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub(crate) enum CatalogCommand {
    /// Validate a catalog file and print what it would serve.
    Check { file: String },
}

#[derive(Subcommand, Debug)]
pub(crate) enum ConfigCommand {
    /// Check every setting, the catalog and the database; print the whole
    /// effective configuration (secrets masked) and every warning.
    Check {
        /// Exit with status 1 when there is any warning.
        #[arg(long)]
        strict: bool,
    },
}

/// The operation's refusal as one line: its code, field and message.
fn refused(e: impl Into<ApiError>) -> anyhow::Error {
    let e = e.into();
    match e.param {
        Some(param) => anyhow!("{} ({param}): {}", e.code, e.message),
        None => anyhow!("{}: {}", e.code, e.message),
    }
}

fn uuid(what: &str, text: &str) -> anyhow::Result<Uuid> {
    Uuid::parse_str(text).map_err(|_| anyhow!("`{text}` is not a {what} ID"))
}

/// What the commands run against: the settings, the configured catalog
/// and database (a small pool).
async fn configured(args: &ServeArgs) -> anyhow::Result<(ServerConfig, Catalog, Database)> {
    let config = args.server_config()?;
    let (catalog, _) = load_catalog(&config.catalog_path)?;
    let db = Database::connect(&config.database_url, 2)
        .await
        .context("DATABASE_URL: cannot connect")?;
    Ok((config, catalog, db))
}

/// The operator wing over the configured database, and the catalog its
/// rules check model names against.
async fn operator(args: &ServeArgs) -> anyhow::Result<(Operator, Catalog)> {
    let (config, catalog, db) = configured(args).await?;
    Ok((Operator::new(db, config.session_ttl), catalog))
}

/// A whole router's state, for the video commands (the gateway that the
/// operator wing's video operations, `router_operator::videos`, run
/// through).
async fn operator_app(args: &ServeArgs) -> anyhow::Result<App> {
    let (config, catalog, db) = configured(args).await?;
    // Operator commands serve no catalog view and record no release.
    let catalog = std::sync::Arc::new(catalog);
    let views = router_catalog::CatalogViews::build(
        catalog.clone(),
        router_catalog::ReleaseInfo::default(),
    );
    app(&config, catalog, views, db).await
}

pub(crate) async fn accounts(
    args: &ServeArgs,
    command: AccountsCommand,
    out: &Output,
) -> anyhow::Result<()> {
    let (operator, _) = operator(args).await?;
    match command {
        AccountsCommand::Create { email, verified } => {
            let new = NewAccount {
                email,
                email_verified: verified,
            };
            let view = operator.create_account(new).await.map_err(refused)?;
            out.show(&view, |v| {
                format!("created account {} ({})", field(v, "id"), field(v, "email"))
            });
        }
        AccountsCommand::List { limit, before } => {
            let before = before.map(|id| uuid("account", &id)).transpose()?;
            let view = operator.accounts(limit, before).await.map_err(refused)?;
            out.show(&view, |v| {
                let mut text = String::new();
                for account in v["data"].as_array().into_iter().flatten() {
                    let nano = |name: &str| usd(account[name].as_i64().unwrap_or_default());
                    text.push_str(&format!(
                        "{}  {}  balance {} USD  held {} USD  {}\n",
                        field(account, "id"),
                        field(account, "email"),
                        nano("balance_nano_usd"),
                        nano("held_nano_usd"),
                        field(account, "created_at"),
                    ));
                }
                if text.is_empty() {
                    "no accounts".to_owned()
                } else {
                    text
                }
            });
        }
        AccountsCommand::Show { id } => {
            let view = operator
                .account(uuid("account", &id)?)
                .await
                .map_err(refused)?;
            out.show(&view, account_text);
        }
        AccountsCommand::Credit {
            id,
            usd: usd_text,
            amount_nano_usd,
        } => {
            let amount = match (usd_text, amount_nano_usd) {
                (Some(text), None) => parse_usd(&text).ok_or_else(|| {
                    anyhow!("--usd: `{text}` is not a positive USD amount (at most nine decimals)")
                })?,
                (None, Some(nano)) => nano,
                _ => bail!("give the amount: --usd 12.50 or --amount-nano-usd 12500000000"),
            };
            let credits = Credits {
                amount_nano_usd: amount,
            };
            let view = operator
                .credit_account(uuid("account", &id)?, credits)
                .await
                .map_err(refused)?;
            out.show(&view, |v| {
                format!(
                    "account {}: balance {} USD",
                    field(v, "account_id"),
                    usd(v["balance_nano_usd"].as_i64().unwrap_or_default())
                )
            });
        }
    }
    Ok(())
}

fn account_text(v: &Value) -> String {
    let nano = |name: &str| usd(v[name].as_i64().unwrap_or_default());
    format!(
        "account    {}\nemail      {}{}\nbalance    {} USD\nheld       {} USD\navailable  {} USD\ncreated    {}\n",
        field(v, "id"),
        field(v, "email"),
        if v["email_verified"] == true {
            " (verified)"
        } else {
            ""
        },
        nano("balance_nano_usd"),
        nano("held_nano_usd"),
        nano("available_nano_usd"),
        field(v, "created_at"),
    )
}

pub(crate) async fn keys(
    args: &ServeArgs,
    command: KeysCommand,
    out: &Output,
) -> anyhow::Result<()> {
    let (operator, catalog) = operator(args).await?;
    match command {
        KeysCommand::Create(create) => {
            let new = new_key(create)?;
            let view = operator
                .create_api_key(&catalog, new)
                .await
                .map_err(refused)?;
            out.show(&view, |v| {
                format!(
                    "created key {} for account {}\nsecret (shown once, store it now): {}",
                    field(v, "id"),
                    field(v, "account_id"),
                    field(v, "key")
                )
            });
        }
        KeysCommand::List { account } => {
            let view = operator
                .api_keys(uuid("account", &account)?)
                .await
                .map_err(refused)?;
            out.show(&view, |v| {
                let mut text = String::new();
                for key in v["data"].as_array().into_iter().flatten() {
                    let state = if key["deleted_at"].is_null() {
                        "active"
                    } else {
                        "revoked"
                    };
                    let scopes: Vec<String> = key["scopes"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|s| s.as_str().map(str::to_owned))
                        .collect();
                    text.push_str(&format!(
                        "{}  {}…  {:7}  {}\n",
                        field(key, "id"),
                        field(key, "prefix"),
                        state,
                        scopes.join(",")
                    ));
                }
                if text.is_empty() {
                    "no keys".to_owned()
                } else {
                    text
                }
            });
        }
        KeysCommand::Update(update) => {
            let id = uuid("key", &update.id)?;
            let patch = key_patch(update)?;
            let view = operator
                .update_api_key(&catalog, id, patch)
                .await
                .map_err(refused)?;
            out.show(&view, |v| {
                format!(
                    "updated key {}\nscopes     {}\nexpires    {}\npolicy     {}\n",
                    field(v, "id"),
                    v["scopes"],
                    field(v, "expires_at"),
                    v["policy"],
                )
            });
        }
        KeysCommand::Show { id } => {
            let view = operator.api_key(uuid("key", &id)?).await.map_err(refused)?;
            out.show(&view, |v| {
                format!(
                    "key        {}\naccount    {}\nprefix     {}…\nscopes     {}\nexpires    {}\nrevoked    {}\npolicy     {}\nspend      {}\n",
                    field(v, "id"),
                    field(v, "account_id"),
                    field(v, "prefix"),
                    v["scopes"],
                    field(v, "expires_at"),
                    field(v, "deleted_at"),
                    v["policy"],
                    v["spend"],
                )
            });
        }
        KeysCommand::Revoke { id } => {
            let id = uuid("key", &id)?;
            operator.delete_api_key(id).await.map_err(refused)?;
            out.show(&json!({"id": id, "deleted": true}), |_| {
                format!("revoked key {id}")
            });
        }
    }
    Ok(())
}

/// A new key's input, from the flags.
fn new_key(create: KeyCreate) -> anyhow::Result<NewApiKey> {
    let some = |values: Vec<String>| (!values.is_empty()).then_some(values);
    let spend_limits = create
        .policy
        .spend_limits
        .iter()
        .map(|text| spend_limit(text))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(NewApiKey {
        account_id: uuid("account", &create.account)?,
        scopes: create.scopes,
        expires_at: create.policy.expires_at,
        allowed_models: some(create.policy.allowed_models),
        ip_allowlist: some(create.policy.ip_allowlist),
        prompt_cache_mode: create.policy.prompt_cache_mode,
        response_cache_ttl_seconds: create.policy.response_cache_ttl_seconds,
        spend_limits: (!spend_limits.is_empty()).then_some(spend_limits),
        monthly_budget_nano_usd: create.policy.monthly_budget_nano_usd,
        requests_per_minute: create.policy.requests_per_minute,
        requests_per_day: create.policy.requests_per_day,
        max_concurrent_requests: create.policy.max_concurrent_requests,
    })
}

/// `--spend-limit AMOUNT_NANO_USD/WINDOW_SECONDS`.
fn spend_limit(text: &str) -> anyhow::Result<SpendLimitJson> {
    text.split_once('/')
        .and_then(|(a, s)| {
            Some(SpendLimitJson {
                amount_nano_usd: a.parse().ok()?,
                window_seconds: s.parse().ok()?,
            })
        })
        .ok_or_else(|| anyhow!("--spend-limit: `{text}` is not AMOUNT_NANO_USD/WINDOW_SECONDS"))
}

pub(crate) async fn sessions(
    args: &ServeArgs,
    command: SessionsCommand,
    out: &Output,
) -> anyhow::Result<()> {
    let (operator, _) = operator(args).await?;
    match command {
        SessionsCommand::Create {
            account,
            ttl_seconds,
        } => {
            let view = operator
                .create_session(uuid("account", &account)?, NewSession { ttl_seconds })
                .await
                .map_err(refused)?;
            out.show(&view, |v| {
                format!(
                    "session {} for account {} until {}\ncookie (shown once): {}={}",
                    field(v, "id"),
                    field(v, "account_id"),
                    field(v, "expires_at"),
                    field(v, "cookie_name"),
                    field(v, "cookie_value")
                )
            });
        }
        SessionsCommand::Revoke { id } => {
            let id = uuid("session", &id)?;
            operator.revoke_session(id).await.map_err(refused)?;
            out.show(&json!({"id": id, "revoked": true}), |_| {
                format!("revoked session {id}")
            });
        }
    }
    Ok(())
}

pub(crate) async fn requests(
    args: &ServeArgs,
    command: RequestsCommand,
    out: &Output,
) -> anyhow::Result<()> {
    let (operator, _) = operator(args).await?;
    let RequestsCommand::Show { id } = command;
    let view = operator
        .request(uuid("request", &id)?)
        .await
        .map_err(refused)?;
    out.show(&view, |v| {
        let nano = |name: &str| match v[name].as_i64() {
            Some(n) => format!("{} USD", usd(n)),
            None => "-".to_owned(),
        };
        format!(
            "request    {}\nstatus     {}\nmodel      {} ({}, stream {})\nroute      {}\nreserved   {}\ncharged    {}\nusage      {}\nattempts   {}\nerror      {}\ncreated    {}\nfinished   {}\n",
            field(v, "id"),
            field(v, "status"),
            field(v, "model"),
            field(v, "protocol"),
            field(v, "stream"),
            field(v, "route_id"),
            nano("reserved_nano_usd"),
            nano("charged_nano_usd"),
            v["usage"],
            v["attempts"].as_array().map_or(0, Vec::len),
            field(v, "error_reason"),
            field(v, "created_at"),
            field(v, "finished_at"),
        )
    });
    Ok(())
}

pub(crate) async fn videos(
    args: &ServeArgs,
    command: VideosCommand,
    out: &Output,
) -> anyhow::Result<()> {
    let app = operator_app(args).await?;
    let view = match command {
        VideosCommand::Show { id } => router_operator::videos::show_video(&app.gateway, &id).await,
        VideosCommand::Reconcile {
            id,
            task_id,
            failed,
        } => {
            let body = router_core::video_jobs::Reconcile {
                upstream_task_id: task_id,
                outcome: failed.is_some().then(|| "failed".to_owned()),
                reason: failed,
            };
            router_operator::videos::reconcile_video(&app.gateway, &id, body).await
        }
    }
    .map_err(refused)?;
    out.show(&view, |v| {
        format!(
            "video      {}\nstatus     {} ({}%)\nmodel      {} (route {})\ntask       {}\ncharge     {} USD\nrequest    {}\nsupplier   {}\ncreated    {}\ncompleted  {}\n",
            field(v, "id"),
            field(v, "status"),
            field(v, "progress"),
            field(v, "model"),
            field(v, "route_id"),
            field(v, "upstream_task_id"),
            field(v, "charge_usd"),
            field(v, "request_id"),
            field(v, "supplier_error"),
            field(v, "created_at"),
            field(v, "completed_at"),
        )
    });
    Ok(())
}

/// `router catalog check FILE`: what the file would serve, or why not.
pub(crate) fn catalog(command: CatalogCommand, out: &Output) -> anyhow::Result<()> {
    let CatalogCommand::Check { file } = command;
    // The error names the file and line itself.
    let catalog = Catalog::load(&file).map_err(|e| anyhow!("{e}"))?;
    let summary = catalog_summary(&catalog);
    out.show(&summary, |v| {
        let mut text = format!(
            "{file}: valid, {} models, {} routes, {} suppliers\n",
            v["models"].as_array().map_or(0, Vec::len),
            v["routes"],
            v["suppliers"]
        );
        for model in v["models"].as_array().into_iter().flatten() {
            text.push_str(&format!(
                "  {}  ({} routes)\n",
                field(model, "id"),
                model["routes"]
            ));
        }
        text
    });
    Ok(())
}

fn catalog_summary(catalog: &Catalog) -> Value {
    let mut models: Vec<_> = catalog.models().collect();
    models.sort_by(|a, b| a.id.cmp(&b.id));
    let mut suppliers = std::collections::BTreeSet::new();
    let mut routes = 0;
    let models: Vec<Value> = models
        .iter()
        .map(|model| {
            let model_routes = catalog.routes(&model.id);
            routes += model_routes.len();
            suppliers.extend(model_routes.iter().map(|r| r.supplier.id.clone()));
            json!({"id": model.id, "aliases": model.aliases, "routes": model_routes.len()})
        })
        .collect();
    json!({
        "valid": true,
        "models": models,
        "routes": routes,
        "suppliers": suppliers.len(),
    })
}

/// `router config check`: every setting parsed, the catalog loaded, the
/// database reached and its migrations read; the effective configuration
/// and the warnings printed, secrets never. `--strict`: warnings fail.
pub(crate) async fn config(
    args: &ServeArgs,
    command: ConfigCommand,
    out: &Output,
) -> anyhow::Result<()> {
    let ConfigCommand::Check { strict } = command;
    let config = args.server_config()?;
    let (catalog, text) = load_catalog(&config.catalog_path)?;
    // Connecting pings the database.
    let db = Database::connect(&config.database_url, 1)
        .await
        .context("DATABASE_URL: cannot connect")?;
    let migrations = db
        .migration_status()
        .await
        .context("DATABASE_URL: cannot read the applied migrations")?;
    let mut warnings = checks::of_settings(args, &config);
    warnings.extend(checks::of_catalog(&config.catalog_path, &text));
    warnings.extend(checks::of_database(&migrations));
    let summary = json!({
        "ok": true,
        "settings": args.effective(),
        "listen": config.listen.to_string(),
        "public_base_url": config.public_base.origin(),
        "catalog": {"path": config.catalog_path, "summary": catalog_summary(&catalog)},
        "database": "reachable",
        "migrations": {
            "applied": migrations.applied.len(),
            "pending": migrations.pending,
            "unknown": migrations.unknown,
        },
        "admin_api": config.admin_token.is_some(),
        "email": config.mailer.is_some(),
        "deadline_secs": config.deadline.as_secs(),
        "hold_lease_secs": config.hold_lease.as_secs(),
        "reaper_interval_secs": config.reaper_interval.as_secs(),
        "db_pool_size": config.database_pool_size,
        "session_ttl_secs": config.session_ttl.as_secs(),
        "warnings": warnings,
    });
    out.show(&summary, |v| {
        let mut text = format!(
            "configuration ok ({} warnings)\nlisten        {}\npublic URL    {}\ncatalog       {} ({} routes)\ndatabase      reachable, {} migrations applied, {} pending\nadmin API     {}\nemail         {}\n\nsettings\n",
            warnings.len(),
            field(v, "listen"),
            field(v, "public_base_url"),
            config.catalog_path,
            v["catalog"]["summary"]["routes"],
            migrations.applied.len(),
            migrations.pending.len(),
            if config.admin_token.is_some() { "on" } else { "off (ROUTER_ADMIN_TOKEN unset)" },
            if config.mailer.is_some() { "on" } else { "off (ROUTER_SMTP_URL unset)" },
        );
        if let Some(settings) = v["settings"].as_object() {
            for (name, value) in settings {
                let value = match value {
                    Value::Null => "(unset)".to_owned(),
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                text.push_str(&format!("  {name} = {value}\n"));
            }
        }
        for w in &warnings {
            text.push_str(&format!("warning: {}: {}\n", w.setting, w.message));
        }
        text
    });
    if strict && !warnings.is_empty() {
        bail!("config check --strict: {} warnings", warnings.len());
    }
    Ok(())
}

/// `router migrate --status`: the applied and pending migrations, and any
/// the database has that this binary does not know (a newer schema).
pub(crate) async fn migration_status(args: &ServeArgs, out: &Output) -> anyhow::Result<()> {
    let url = args.database_url()?;
    let db = Database::connect(&url, 1)
        .await
        .context("DATABASE_URL: cannot connect")?;
    let status = db
        .migration_status()
        .await
        .context("DATABASE_URL: cannot read the applied migrations")?;
    out.show(&status, |_| {
        let mut text = String::new();
        for version in &status.applied {
            text.push_str(&format!("applied  {version}\n"));
        }
        for version in &status.pending {
            text.push_str(&format!("pending  {version}\n"));
        }
        for version in &status.unknown {
            text.push_str(&format!("unknown  {version} (newer than this binary)\n"));
        }
        text.push_str(&format!(
            "{} applied, {} pending, {} unknown\n",
            status.applied.len(),
            status.pending.len(),
            status.unknown.len()
        ));
        text
    });
    Ok(())
}
