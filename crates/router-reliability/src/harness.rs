//! What every part shares: a fresh database on the cluster of
//! `DATABASE_URL`, the mock supplier (in this process, over real HTTP on
//! loopback), `router serve` processes of the binary under test with their
//! logs at TRACE in files, and provisioning through the admin API.

use anyhow::{Context, Result, bail};
use diesel_async::{AsyncConnection, AsyncPgConnection, SimpleAsyncConnection};
use router_mock_supplier::MockSupplier;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The operator token of every router the suite starts (32 characters).
pub const ADMIN_TOKEN: &str = "reliability-operator-token-0f3a9";
/// The supplier key the routers send the mock (grepped for in the logs).
pub const SUPPLIER_KEY: &str = "sk-supplier-reliability-7d41c0";

/// Fixed-price `m-text` on one chat route to the mock: 1 and 2 USD per
/// million tokens, at most 1,000 output tokens.
const CATALOG: &str = r#"
[[suppliers]]
id = "mock"
base_url = "{BASE}"
api_key_env = "TEST_SUPPLIER_KEY"

[[models]]
id = "m-text"
pricing = "fixed"
rates = { input = 1_000_000_000, output = 2_000_000_000 }
max_output_tokens = 1000

[[routes]]
id = "text-primary"
model = "m-text"
supplier = "mock"
upstream_model = "up-text"
protocol = "chat"
capabilities = ["tools", "stop", "streaming", "response_format"]
priority = 10
internal_cost = { input = 900_000_000, output = 900_000_000 }

# The fault matrix: routes A and B of one model on the mock (A preferred:
# higher priority), and a model whose first route reaches the mock through the suite's TCP fault proxy.
[[suppliers]]
id = "mock-proxied"
base_url = "{PROXIED}"
api_key_env = "TEST_SUPPLIER_KEY"

[[models]]
id = "m-fault"
pricing = "fixed"
rates = { input = 1_000_000_000, output = 2_000_000_000 }
max_output_tokens = 1000

[[routes]]
id = "fault-a"
model = "m-fault"
supplier = "mock"
upstream_model = "up-fault-a"
protocol = "chat"
capabilities = ["streaming"]
priority = 20
internal_cost = { input = 900_000_000, output = 900_000_000 }

[[routes]]
id = "fault-b"
model = "m-fault"
supplier = "mock"
upstream_model = "up-fault-b"
protocol = "chat"
capabilities = ["streaming"]
priority = 10
internal_cost = { input = 900_000_000, output = 900_000_000 }

[[models]]
id = "m-proxied"
pricing = "fixed"
rates = { input = 1_000_000_000, output = 2_000_000_000 }
max_output_tokens = 1000

[[routes]]
id = "proxied-a"
model = "m-proxied"
supplier = "mock-proxied"
upstream_model = "up-proxied-a"
protocol = "chat"
capabilities = ["streaming"]
priority = 20
internal_cost = { input = 900_000_000, output = 900_000_000 }

[[routes]]
id = "proxied-b"
model = "m-proxied"
supplier = "mock"
upstream_model = "up-proxied-b"
protocol = "chat"
capabilities = ["streaming"]
priority = 10
internal_cost = { input = 900_000_000, output = 900_000_000 }

# Image generation (the SSRF corpus as the supplier's image URL): 0.04 USD
# an image.
[[models]]
id = "m-image"
modality = "image"
image_price = 40_000_000

[[routes]]
id = "image-primary"
model = "m-image"
supplier = "mock"
upstream_model = "up-image"
protocol = "images"
image_cost = 30_000_000

# Video jobs (crash point K7): held at creation, 720p for 5 s is 0.10 USD.
[[models]]
id = "m-video"
modality = "video"

[models.video]
resolutions = ["720p"]
durations = [5]
aspect_ratios = ["16:9"]
max_prompt_length = 200
references = { images = 2, videos = 1, audios = 1, audio_videos = 1, total = 3 }
rates = { "720p" = { minimum = 100_000_000, per_second = 20_000_000 } }

[[routes]]
id = "video-primary"
model = "m-video"
supplier = "mock"
upstream_model = "up-video"
protocol = "videos"
internal_cost = { input = 0, output = 0 }
"#;

pub struct Suite {
    pub quick: bool,
    router_bin: PathBuf,
    pub work: PathBuf,
    cluster_url: String,
    pub db_name: String,
    pub db_url: String,
    pub mock: MockSupplier,
    /// The TCP fault proxy in front of the mock (supplier `mock-proxied`).
    pub supplier_proxy: crate::fault_proxy::FaultProxy,
    catalog: PathBuf,
    /// Every router log file, for the secrets grep.
    pub logs: Mutex<Vec<PathBuf>>,
    /// Every key issued, for the secrets grep.
    pub secrets: Mutex<Vec<String>>,
    pub client: reqwest::Client,
}

/// `url` with its database name replaced by `name`.
pub fn with_database(url: &str, name: &str) -> Result<String> {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let (server, _) = base
        .rsplit_once('/')
        .filter(|(server, _)| server.contains("://"))
        .with_context(|| "DATABASE_URL has no database name")?;
    Ok(match query {
        Some(query) => format!("{server}/{name}?{query}"),
        None => format!("{server}/{name}"),
    })
}

impl Suite {
    pub async fn start(quick: bool, router_bin: PathBuf, work: PathBuf) -> Result<Suite> {
        let cluster_url = std::env::var("DATABASE_URL")
            .context("DATABASE_URL is not set (cargo xtask reliability sets it)")?;
        let db_name = format!("router_reliability_{}", uuid::Uuid::new_v4().simple());
        let mut admin = AsyncPgConnection::establish(&cluster_url)
            .await
            .context("connecting to DATABASE_URL")?;
        admin
            .batch_execute(&format!("CREATE DATABASE {db_name}"))
            .await?;
        let db_url = with_database(&cluster_url, &db_name)?;
        // Migrated before anything reads it: the sampler's snapshots and a
        // migration's ALTER TABLEs can deadlock.
        let migrate = tokio::process::Command::new(&router_bin)
            .arg("migrate")
            .env("DATABASE_URL", &db_url)
            .env_remove("ROUTER_LOG")
            .output()
            .await
            .with_context(|| format!("running {} migrate", router_bin.display()))?;
        if !migrate.status.success() {
            bail!(
                "router migrate failed: {}",
                String::from_utf8_lossy(&migrate.stderr)
            );
        }
        std::fs::create_dir_all(&work)?;
        let mock = MockSupplier::start("127.0.0.1:0".parse()?).await?;
        let catalog = work.join("catalog.toml");
        let mock_address = mock
            .base_url()
            .strip_prefix("http://")
            .and_then(|rest| rest.split('/').next())
            .context("the mock's address")?
            .to_owned();
        let supplier_proxy =
            crate::fault_proxy::FaultProxy::start(mock_address, crate::fault_proxy::Path::Up)
                .await?;
        let proxied = format!("http://127.0.0.1:{}/v1", supplier_proxy.port);
        std::fs::write(
            &catalog,
            CATALOG
                .replace("{BASE}", &mock.base_url())
                .replace("{PROXIED}", &proxied),
        )?;
        Ok(Suite {
            quick,
            router_bin,
            work,
            cluster_url,
            db_name,
            db_url,
            mock,
            supplier_proxy,
            catalog,
            logs: Mutex::new(Vec::new()),
            secrets: Mutex::new(Vec::new()),
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()?,
        })
    }

    /// Drops the suite's database.
    pub async fn finish(&self) -> Result<()> {
        let mut admin = AsyncPgConnection::establish(&self.cluster_url).await?;
        admin
            .batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.db_name
            ))
            .await?;
        Ok(())
    }

    /// A connection to the suite's database.
    pub async fn connection(&self) -> Result<AsyncPgConnection> {
        Ok(AsyncPgConnection::establish(&self.db_url).await?)
    }

    /// `router serve` on a free loopback port against `database_url`, with
    /// `env` added; ready when returned.
    pub async fn router(
        &self,
        name: &str,
        database_url: &str,
        env: &[(&str, &str)],
    ) -> Result<RouterProcess> {
        self.start_router(name, database_url, env, "/readyz").await
    }

    /// [`Suite::router`], returned once it answers `/healthz` (alive, not
    /// necessarily ready).
    pub async fn router_alive(
        &self,
        name: &str,
        database_url: &str,
        env: &[(&str, &str)],
    ) -> Result<RouterProcess> {
        self.start_router(name, database_url, env, "/healthz").await
    }

    async fn start_router(
        &self,
        name: &str,
        database_url: &str,
        env: &[(&str, &str)],
        probe: &str,
    ) -> Result<RouterProcess> {
        let port = free_port()?;
        let log = self.work.join(format!("{name}.log"));
        let file = std::fs::File::create(&log)?;
        let mut command = tokio::process::Command::new(&self.router_bin);
        command
            .arg("serve")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("DATABASE_URL", database_url)
            .env("ROUTER_LISTEN", format!("127.0.0.1:{port}"))
            .env("ROUTER_CATALOG", &self.catalog)
            .env("ROUTER_ADMIN_TOKEN", ADMIN_TOKEN)
            .env("TEST_SUPPLIER_KEY", SUPPLIER_KEY)
            .env("ROUTER_LOG", "trace")
            .env("ROUTER_LOG_FORMAT", "json")
            .stdout(std::process::Stdio::null())
            .stderr(file)
            .kill_on_drop(true);
        // Credit leases (issue 34) are on for every router of a run when the
        // suite itself is started with `ROUTER_CREDIT_LEASES=1`.
        for (name, value) in std::env::vars() {
            if name.starts_with("ROUTER_CREDIT_LEASE") {
                command.env(name, value);
            }
        }
        for (name, value) in env {
            command.env(name, value);
        }
        let child = command
            .spawn()
            .with_context(|| format!("starting {}", self.router_bin.display()))?;
        self.logs.lock().map_err(poisoned)?.push(log.clone());
        let router = RouterProcess {
            child,
            base: format!("http://127.0.0.1:{port}"),
            log,
        };
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(60) {
            if let Ok(resp) = self
                .client
                .get(format!("{}{probe}", router.base))
                .send()
                .await
                && resp.status() == 200
            {
                return Ok(router);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        bail!(
            "router {name} did not answer {probe}; its log: {}",
            router.log.display()
        )
    }

    /// `POST` an admin call; the status and JSON body.
    pub async fn admin(&self, base: &str, path: &str, body: Value) -> Result<(u16, Value)> {
        let resp = self
            .client
            .post(format!("{base}{path}"))
            .bearer_auth(ADMIN_TOKEN)
            .json(&body)
            .send()
            .await?;
        let status = resp.status().as_u16();
        let body = resp.json().await.unwrap_or(Value::Null);
        Ok((status, body))
    }

    /// `POST /admin/jobs/{job}/run` (no body): one pass of a background
    /// job now; the status and JSON body.
    pub async fn run_job(&self, base: &str, job: &str) -> Result<(u16, Value)> {
        let resp = self
            .client
            .post(format!("{base}/admin/jobs/{job}/run"))
            .bearer_auth(ADMIN_TOKEN)
            .send()
            .await?;
        let status = resp.status().as_u16();
        let body = resp.json().await.unwrap_or(Value::Null);
        Ok((status, body))
    }

    /// `GET` an admin resource's JSON.
    pub async fn admin_get(&self, base: &str, path: &str) -> Result<Value> {
        Ok(self
            .client
            .get(format!("{base}{path}"))
            .bearer_auth(ADMIN_TOKEN)
            .send()
            .await?
            .json()
            .await?)
    }

    /// A new account with `credits` nano-USD and an inference key with
    /// `policy` (spend limits, budget); the account id and the key.
    pub async fn customer(
        &self,
        base: &str,
        credits: i64,
        policy: Value,
    ) -> Result<(String, String)> {
        let email = format!("rel-{}@example.com", uuid::Uuid::new_v4().simple());
        let (status, account) = self
            .admin(
                base,
                "/admin/accounts",
                json!({"email": email, "email_verified": true}),
            )
            .await?;
        if status != 201 {
            bail!("creating an account: {status} {account}");
        }
        let id = account["id"].as_str().context("account id")?.to_owned();
        if credits > 0 {
            let (status, body) = self
                .admin(
                    base,
                    &format!("/admin/accounts/{id}/credits"),
                    json!({"amount_nano_usd": credits}),
                )
                .await?;
            if status != 200 {
                bail!("crediting: {status} {body}");
            }
        }
        let mut key_body = json!({"account_id": id, "scopes": ["inference"]});
        if let (Some(target), Some(policy)) = (key_body.as_object_mut(), policy.as_object()) {
            target.extend(policy.clone());
        }
        let (status, key) = self.admin(base, "/admin/api-keys", key_body).await?;
        if status != 201 {
            bail!("creating a key: {status} {key}");
        }
        let key = key["key"].as_str().context("key")?.to_owned();
        self.secrets.lock().map_err(poisoned)?.push(key.clone());
        Ok((id, key))
    }
}

pub fn poisoned<T>(_: std::sync::PoisonError<T>) -> anyhow::Error {
    anyhow::anyhow!("a lock was poisoned")
}

pub fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

pub struct RouterProcess {
    pub child: tokio::process::Child,
    pub base: String,
    pub log: PathBuf,
}

impl RouterProcess {
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Resident memory in KiB, from `/proc`.
    pub fn rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()?)).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
    }

    /// Stops the router; `Err` when it had already exited by itself (a
    /// crash is a violation of whatever part ran it).
    pub async fn stop(mut self) -> Result<()> {
        let exited = self.child.try_wait()?;
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
        match exited {
            Some(status) => bail!(
                "the router exited by itself ({status}); its log: {}",
                self.log.display()
            ),
            None => Ok(()),
        }
    }
}

/// The hold one [`hello`] takes: measured by sending one from a rich
/// account and reading its request's hold.
pub async fn hold_of_one_request(suite: &Suite, base: &str) -> Result<i64> {
    let (_, key) = suite.customer(base, 1_000_000_000_000, json!({})).await?;
    let resp = suite
        .client
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth(&key)
        .json(&hello())
        .send()
        .await?;
    if resp.status() != 200 {
        bail!("the probe request answered {}", resp.status());
    }
    let id = resp
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .context("x-request-id")?
        .to_owned();
    let record = suite
        .admin_get(base, &format!("/admin/requests/{id}"))
        .await?;
    record["hold"]["amount_nano"]
        .as_i64()
        .with_context(|| format!("the probe's hold: {record}"))
}

/// The one request body every load sends.
/// What `account`'s active credit leases hold (0 without leases): the
/// part of its `held_nano` that is not a request's hold.
pub async fn leased_of(suite: &Suite, account: &str) -> Result<i64> {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Sum {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let mut conn = suite.connection().await?;
    let sum: Sum = diesel::sql_query(format!(
        "SELECT coalesce(sum(amount_nano), 0)::bigint AS n FROM credit_leases
         WHERE status = 'active' AND account_id = '{}'",
        uuid::Uuid::parse_str(account).context("account id")?
    ))
    .get_result(&mut conn)
    .await?;
    Ok(sum.n)
}

/// With credit leases on: how many leases the routers took (and how many
/// for keys with spend limits), and how many requests were admitted from
/// them. The run proves the leased path only if some were.
pub async fn lease_figures(suite: &Suite) -> Result<(String, bool)> {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Figures {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        leases: i64,
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        key_leases: i64,
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        leased_requests: i64,
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        key_leased_requests: i64,
    }
    let mut conn = suite.connection().await?;
    let f: Figures = diesel::sql_query(
        "SELECT (SELECT count(*) FROM credit_leases) AS leases,
                (SELECT count(*) FROM credit_leases WHERE api_key_id IS NOT NULL) AS key_leases,
                (SELECT count(*) FROM holds WHERE lease_id IS NOT NULL) AS leased_requests,
                (SELECT count(*) FROM holds h JOIN credit_leases c ON c.id = h.lease_id
                 WHERE c.api_key_id IS NOT NULL) AS key_leased_requests",
    )
    .get_result(&mut conn)
    .await?;
    Ok((
        format!(
            "leases: {} taken ({} for keys with spend limits), {} requests admitted from them ({} on keys' leases)",
            f.leases, f.key_leases, f.leased_requests, f.key_leased_requests
        ),
        // The concurrency cases fire every request at once, before a key's
        // lease exists: keys' leased admissions are proven by the store's
        // two-instance race (`leases::a_keys_spend_limit_rides_its_lease…`).
        f.leases > 0 && f.leased_requests > 0,
    ))
}

pub fn hello() -> Value {
    json!({"model": "m-text", "max_tokens": 50, "messages": [{"role": "user", "content": "hello"}]})
}

/// A reqwest client whose connections come from `local` (a loopback
/// address of its own, so the per-address connection cap counts each
/// client separately).
pub fn client_from(local: std::net::IpAddr) -> Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .local_address(local)
        .pool_max_idle_per_host(256)
        .timeout(Duration::from_secs(60))
        .build()?)
}
