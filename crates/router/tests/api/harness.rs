//! Starts a router, a mock supplier and a test database for one test.

use router_core::{Catalog, Gateway, GatewayConfig, SealKey};
use router_http::client_addr::TrustedProxies;
use router_http::connection::ConnectionLimits;
use router_http::public_url::PublicBaseUrl;
use router_mock_supplier::MockSupplier;
use router_mock_supplier::smtp_sink::SmtpSink;
use router_notify::Mailer;
use router_server::App;
pub use router_server::app::PromptCacheSettings;
use router_store::test_support::TestDatabase;
use router_supply::HttpSuppliers;
use router_supply::url_guard::UrlPolicy;
use router_uploads::{ObjectStorage, UploadSettings};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

pub const ADMIN_TOKEN: &str = "test-operator-token";

/// Image generation settings of a test router.
#[derive(Debug, Clone, Copy)]
pub struct ImageSettings {
    pub deadline: Duration,
    /// The mock supplier serves URL answers on loopback, so tests allow it
    /// unless they test the refusal.
    pub allow_loopback: bool,
}

impl Default for ImageSettings {
    fn default() -> Self {
        ImageSettings {
            deadline: Duration::from_secs(120),
            allow_loopback: true,
        }
    }
}

/// Fixed-price `m-text` (primary + fallback chat routes), supply-priced
/// `m-supply` (two routes with different quotes), and `m-off` whose only
/// route is disabled. `{BASE}` is replaced by the mock supplier's URL.
pub const CATALOG: &str = r#"
[[suppliers]]
id = "acme-secret-supplier"
base_url = "{BASE}"
api_key_env = "TEST_SUPPLIER_KEY"

[[models]]
id = "m-text"
aliases = ["text-alias"]
pricing = "fixed"
rates = { input = 1_000_000_000, output = 2_000_000_000 }
max_output_tokens = 1000

[[models]]
id = "m-supply"
pricing = "supply"
max_output_tokens = 1000
list_price = { input = 2_000_000_000, output = 2_000_000_000 }

[[models]]
id = "m-off"
pricing = "fixed"
rates = { input = 1, output = 1 }

[[routes]]
id = "text-primary"
model = "m-text"
supplier = "acme-secret-supplier"
upstream_model = "up-text-primary"
protocol = "chat"
capabilities = ["tools", "stop", "streaming", "reasoning", "response_format", "thinking"]
priority = 10
internal_cost = { input = 900_000_000, output = 900_000_000 }

[[routes]]
id = "text-fallback"
model = "m-text"
supplier = "acme-secret-supplier"
upstream_model = "up-text-fallback"
protocol = "chat"
capabilities = ["tools", "stop", "streaming", "reasoning", "response_format", "thinking"]
priority = 5
internal_cost = { input = 100_000_000, output = 100_000_000 }

[[routes]]
id = "supply-a"
model = "m-supply"
supplier = "acme-secret-supplier"
upstream_model = "up-supply-a"
protocol = "chat"
capabilities = ["streaming"]
priority = 10
internal_cost = { input = 1, output = 1 }
quote = { input = 1_000_000_000, output = 1_000_000_000 }

[[routes]]
id = "supply-b"
model = "m-supply"
supplier = "acme-secret-supplier"
upstream_model = "up-supply-b"
protocol = "chat"
capabilities = ["streaming"]
priority = 5
internal_cost = { input = 1, output = 1 }
quote = { input = 3_000_000_000, output = 3_000_000_000 }

# Claude-like: a native Messages route first, a Chat route as fallback.
[[models]]
id = "m-claude"
vendor = "anthropic"
pricing = "fixed"
rates = { input = 1_000_000_000, output = 2_000_000_000, cache_read = 100_000_000, cache_write = 1_250_000_000 }
max_output_tokens = 8192

[[routes]]
id = "claude-native"
model = "m-claude"
supplier = "acme-secret-supplier"
upstream_model = "up-claude-native"
protocol = "messages"
capabilities = ["tools", "stop", "streaming", "reasoning", "thinking", "vision", "response_format", "prompt_cache"]
priority = 10
internal_cost = { input = 900_000_000, output = 900_000_000 }
betas = ["context-1m-2025-08-07", "interleaved-thinking-2025-05-14"]

[[routes]]
id = "claude-chat"
model = "m-claude"
supplier = "acme-secret-supplier"
upstream_model = "up-claude-chat"
protocol = "chat"
capabilities = ["tools", "stop", "streaming", "reasoning", "thinking", "vision", "response_format"]
priority = 5
internal_cost = { input = 900_000_000, output = 900_000_000 }

# GPT-like: Chat routes only.
[[models]]
id = "m-gpt-only"
pricing = "fixed"
rates = { input = 1_000_000_000, output = 2_000_000_000 }
max_output_tokens = 4096

[[routes]]
id = "gpt-chat"
model = "m-gpt-only"
supplier = "acme-secret-supplier"
upstream_model = "up-gpt"
protocol = "chat"
capabilities = ["tools", "stop", "streaming", "reasoning", "thinking", "vision", "response_format"]
internal_cost = { input = 1, output = 1 }

# One model per route protocol, for the cross-protocol matrix.
[[models]]
id = "m-via-chat"
pricing = "fixed"
rates = { input = 1_000_000_000, output = 2_000_000_000, cache_read = 100_000_000, cache_write = 1_250_000_000 }
max_output_tokens = 4096

[[routes]]
id = "via-chat"
model = "m-via-chat"
supplier = "acme-secret-supplier"
upstream_model = "up-via-chat"
protocol = "chat"
capabilities = ["tools", "stop", "streaming", "reasoning", "thinking", "vision", "response_format"]
internal_cost = { input = 1, output = 1 }

[[models]]
id = "m-via-messages"
pricing = "fixed"
rates = { input = 1_000_000_000, output = 2_000_000_000, cache_read = 100_000_000, cache_write = 1_250_000_000 }
max_output_tokens = 4096

[[routes]]
id = "via-messages"
model = "m-via-messages"
supplier = "acme-secret-supplier"
upstream_model = "up-via-messages"
protocol = "messages"
capabilities = ["tools", "stop", "streaming", "reasoning", "thinking", "vision", "response_format"]
internal_cost = { input = 1, output = 1 }

[[models]]
id = "m-via-responses"
pricing = "fixed"
rates = { input = 1_000_000_000, output = 2_000_000_000, cache_read = 100_000_000, cache_write = 1_250_000_000 }
max_output_tokens = 4096

[[routes]]
id = "via-responses"
model = "m-via-responses"
supplier = "acme-secret-supplier"
upstream_model = "up-via-responses"
protocol = "responses"
capabilities = ["tools", "stop", "streaming", "reasoning", "thinking", "vision", "response_format"]
internal_cost = { input = 1, output = 1 }

# Thinking across a fallback between dialects (router thinking signatures).
[[models]]
id = "m-think-responses-first"
pricing = "fixed"
rates = { input = 1_000_000_000, output = 2_000_000_000 }
max_output_tokens = 4096

[[routes]]
id = "think-rf-responses"
model = "m-think-responses-first"
supplier = "acme-secret-supplier"
upstream_model = "up-think-rf-responses"
protocol = "responses"
capabilities = ["streaming", "reasoning", "thinking"]
priority = 10
internal_cost = { input = 1, output = 1 }

[[routes]]
id = "think-rf-messages"
model = "m-think-responses-first"
supplier = "acme-secret-supplier"
upstream_model = "up-think-rf-messages"
protocol = "messages"
capabilities = ["streaming", "reasoning", "thinking"]
priority = 5
internal_cost = { input = 1, output = 1 }

[[models]]
id = "m-think-messages-first"
pricing = "fixed"
rates = { input = 1_000_000_000, output = 2_000_000_000 }
max_output_tokens = 4096

[[routes]]
id = "think-mf-messages"
model = "m-think-messages-first"
supplier = "acme-secret-supplier"
upstream_model = "up-think-mf-messages"
protocol = "messages"
capabilities = ["streaming", "reasoning", "thinking"]
priority = 10
internal_cost = { input = 1, output = 1 }

[[routes]]
id = "think-mf-responses"
model = "m-think-messages-first"
supplier = "acme-secret-supplier"
upstream_model = "up-think-mf-responses"
protocol = "responses"
capabilities = ["streaming", "reasoning", "thinking"]
priority = 5
internal_cost = { input = 1, output = 1 }

# Catalog views: a vendor-prefixed ID (slash), a hidden model, an image
# model and a video model.
[[models]]
id = "vendor/model-x"
aliases = ["model-x-alias"]
pricing = "fixed"
vendor = "vendor"
context_length = 128000
rates = { input = 400_000, output = 0 }

[[routes]]
id = "model-x-chat"
model = "vendor/model-x"
supplier = "acme-secret-supplier"
upstream_model = "up-model-x"
protocol = "chat"
capabilities = ["streaming"]
internal_cost = { input = 1, output = 1 }

[[models]]
id = "m-hidden"
pricing = "fixed"
hidden = true
rates = { input = 1, output = 1 }

[[routes]]
id = "hidden-chat"
model = "m-hidden"
supplier = "acme-secret-supplier"
upstream_model = "up-hidden"
protocol = "chat"
capabilities = ["streaming"]
internal_cost = { input = 1, output = 1 }

# Image generation (section N): 0.04 USD per image, one images route.
[[models]]
id = "m-img"
aliases = ["img-alias"]
modality = "image"
image_price = 40_000_000

[[routes]]
id = "img-route"
model = "m-img"
supplier = "acme-secret-supplier"
upstream_model = "up-img"
protocol = "images"
image_cost = 30_000_000

[[models]]
id = "m-video"
pricing = "fixed"
modality = "video"

[models.video]
resolutions = ["720p", "1080p"]
durations = [5, 10]
aspect_ratios = ["16:9", "9:16"]
max_prompt_length = 2000
references = { images = 2, videos = 1, audios = 1, audio_videos = 1, total = 3 }
rates = { "720p" = { minimum = 100_000_000, per_second = 20_000_000 }, "1080p" = { minimum = 200_000_000, per_second = 0 } }

[[routes]]
id = "video-gen"
model = "m-video"
supplier = "acme-secret-supplier"
upstream_model = "up-video"
protocol = "videos"
internal_cost = { input = 0, output = 0 }

[[routes]]
id = "off-only"
model = "m-off"
supplier = "acme-secret-supplier"
upstream_model = "up-off"
protocol = "chat"
capabilities = ["streaming"]
enabled = false
internal_cost = { input = 1, output = 1 }
"#;

/// The bot token of test routers' Telegram transport.
pub const TELEGRAM_TOKEN: &str = "123456:test-telegram-token";

/// Channel transports for tests: a Telegram token (the base URL is each
/// channel's `api_base`, a loopback receiver) and a short delivery timeout
/// so a hanging receiver ends a test quickly. The receivers listen on
/// loopback, so tests allow it unless they test the refusal.
fn test_transports(allow_loopback: bool) -> router_notify::Transports {
    router_notify::Transports::new(
        Some(TELEGRAM_TOKEN.to_owned()),
        None,
        Duration::from_secs(2),
    )
    .allow_loopback(allow_loopback)
}

pub struct TestRouter {
    /// The router's state, to run background passes directly.
    pub app: Arc<App>,
    pub base: String,
    pub mock: MockSupplier,
    /// The SMTP server the router mails to (`start_with_mail`).
    pub smtp: Option<SmtpSink>,
    pub db: TestDatabase,
    pub client: reqwest::Client,
    /// Its upload settings (a fresh folder store unless the test chose).
    pub uploads: UploadSettings,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    catalog_path: std::path::PathBuf,
}

/// A file store in a fresh folder of its own.
pub fn test_uploads() -> UploadSettings {
    let dir = std::env::temp_dir()
        .join("router-test-uploads")
        .join(uuid::Uuid::new_v4().simple().to_string());
    UploadSettings {
        storage: Some(ObjectStorage::from_url(&format!("file://{}", dir.display())).unwrap()),
        ..UploadSettings::default()
    }
}

impl Drop for TestRouter {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let _ = std::fs::remove_file(&self.catalog_path);
        // A folder store of the test's own (`test_uploads`) goes with it,
        // so a run does not leave gigabytes of uploads in the temp folder.
        let own_folder = self
            .uploads
            .storage
            .as_ref()
            .and_then(|storage| storage.location().strip_prefix("file://"))
            .map(std::path::PathBuf::from)
            .filter(|dir| dir.starts_with(std::env::temp_dir().join("router-test-uploads")));
        if let Some(dir) = own_folder {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A second router instance on a [`TestRouter`]'s database; stops when dropped.
pub struct SecondRouter {
    pub base: String,
    pub client: reqwest::Client,
    _shutdown: tokio::sync::oneshot::Sender<()>,
}

impl SecondRouter {
    pub async fn chat(&self, key: &str, body: &Value) -> reqwest::Response {
        self.client
            .post(format!("{}/v1/chat/completions", self.base))
            .bearer_auth(key)
            .json(body)
            .send()
            .await
            .unwrap()
    }
}

/// A chat reply that waits `ms` before its head, so requests overlap.
pub fn slow_reply(ms: u64) -> router_mock_supplier::Script {
    router_mock_supplier::MockReply {
        delay_ms: ms,
        ..router_mock_supplier::MockReply::text("slow")
    }
    .into()
}

/// What differs between the test routers' shared state.
pub struct AppSettings {
    pub deadline: Duration,
    pub trusted_proxies: TrustedProxies,
    pub mailer: Option<Arc<Mailer>>,
    pub images: ImageSettings,
    pub prompt_cache: PromptCacheSettings,
    pub uploads: UploadSettings,
    /// `ROUTER_ADMIN_TEST_HOOKS`.
    pub test_hooks: bool,
    /// Video polling: every manual pass polls every active job unless a
    /// test sets an interval.
    pub videos: router_server::videos::VideoSettings,
    /// `ROUTER_CHANNEL_URL_ALLOW_LOOPBACK` (on: the webhook sinks are on
    /// loopback).
    pub channel_url_allow_loopback: bool,
}

impl Default for AppSettings {
    fn default() -> Self {
        AppSettings {
            deadline: Duration::from_secs(180),
            trusted_proxies: TrustedProxies::default(),
            mailer: None,
            images: ImageSettings::default(),
            prompt_cache: PromptCacheSettings::default(),
            uploads: test_uploads(),
            test_hooks: true,
            videos: router_server::videos::VideoSettings {
                poll_interval: Duration::ZERO,
            },
            channel_url_allow_loopback: true,
        }
    }
}

/// The router's shared state as `router serve` builds it: the catalog file
/// at `catalog_path` recorded as a release, releases followed by LISTEN.
pub async fn build_app(
    database: router_store::Database,
    catalog_path: &str,
    addr: std::net::SocketAddr,
    settings: AppSettings,
) -> Arc<App> {
    let AppSettings {
        deadline,
        trusted_proxies,
        mailer,
        images,
        prompt_cache,
        uploads,
        test_hooks,
        videos,
        channel_url_allow_loopback,
    } = settings;
    let text = std::fs::read_to_string(catalog_path).unwrap();
    // Every key variable reads the same test key, but the AWS ones read
    // the credentials the mock supplier checks Bedrock signatures with.
    let env: router_catalog::CatalogEnv = Arc::new(|name| {
        Some(
            match name {
                "TEST_AWS_ACCESS_KEY_ID" => router_mock_supplier::MOCK_AWS_ACCESS_KEY_ID,
                "TEST_AWS_SECRET_ACCESS_KEY" => router_mock_supplier::MOCK_AWS_SECRET_ACCESS_KEY,
                _ => "supplier-secret-key",
            }
            .to_owned(),
        )
    });
    let catalog = Arc::new(Catalog::parse(&text, catalog_path, |n| env(n)).unwrap());
    let (views, _) = router_catalog::record(&database, catalog.clone(), catalog_path, &text)
        .await
        .unwrap();
    let config = GatewayConfig {
        deadline,
        image_deadline: images.deadline,
        ..GatewayConfig::default()
    };
    let seal_key = SealKey::load(&database).await.unwrap();
    let suppliers = HttpSuppliers::new()
        .unwrap()
        .with_image_url_policy(UrlPolicy {
            allow_loopback: images.allow_loopback,
        });
    let uploads = router_uploads::Uploads::new(uploads, database.clone());
    let notify = router_notify::Notifier::new(
        database.clone(),
        mailer,
        test_transports(channel_url_allow_loopback),
    );
    let operator = router_operator::Operator::new(
        database.clone(),
        router_operator::sessions::DEFAULT_SESSION_TTL,
    );
    let gateway = Gateway::new(catalog, database.clone(), suppliers, config, seal_key);
    let catalog =
        router_catalog::PublishedCatalog::new(views, catalog_path, env, database, gateway.clone());
    let app = Arc::new(App {
        gateway,
        admin_token: Some(ADMIN_TOKEN.to_owned()),
        // Off: the routes matrix probes every route with bad tokens.
        admin_failures: router_http::admin_throttle::AdminAuthThrottle::new(0),
        metrics_token: None,
        trusted_proxies,
        catalog,
        docs: router_docs::Manual::new(|path| PublicBaseUrl::for_listen(addr).join(path)).unwrap(),
        public_base: PublicBaseUrl::for_listen(addr),
        notify,
        operator,
        prompt_cache,
        uploads,
        reaper_interval: Duration::from_secs(30),
        // Tests are who the time-bending routes are for (a second router
        // may go without, to prove they 404 then).
        test_hooks,
        videos,
        jobs: router::jobs::REGISTRY,
    });
    app.catalog.spawn_follower();
    app
}

/// How a test router starts: its listen address, whether it mails to an
/// SMTP sink, catalog models beyond [`CATALOG`], and its settings.
struct Start<'a> {
    listen: &'a str,
    mail: bool,
    extra_catalog: &'a str,
    settings: AppSettings,
    connections: ConnectionLimits,
}

impl Default for Start<'_> {
    fn default() -> Self {
        Start {
            listen: "127.0.0.1:0",
            mail: false,
            extra_catalog: "",
            settings: AppSettings::default(),
            connections: ConnectionLimits::default(),
        }
    }
}

pub struct Customer {
    pub account_id: String,
    pub key: String,
}

impl TestRouter {
    pub async fn start() -> TestRouter {
        TestRouter::start_with(Duration::from_secs(180)).await
    }

    /// A router with one rich inference customer: where most tests start.
    pub async fn start_rich() -> (TestRouter, Customer) {
        let r = TestRouter::start().await;
        let c = r.rich_customer().await;
        (r, c)
    }

    pub async fn start_with(deadline: Duration) -> TestRouter {
        TestRouter::start_configured(deadline, TrustedProxies::default(), "127.0.0.1:0").await
    }

    /// A router listening on `listen` (e.g. `[::1]:0` for IPv6 clients) that
    /// believes forwarding headers from `trusted_proxies`.
    pub async fn start_configured(
        deadline: Duration,
        trusted_proxies: TrustedProxies,
        listen: &str,
    ) -> TestRouter {
        TestRouter::start_full(Start {
            listen,
            settings: AppSettings {
                deadline,
                trusted_proxies,
                ..AppSettings::default()
            },
            ..Start::default()
        })
        .await
    }

    /// A router with these image settings (deadline, URL policy).
    pub async fn start_images(images: ImageSettings) -> TestRouter {
        TestRouter::start_full(Start {
            settings: AppSettings {
                images,
                ..AppSettings::default()
            },
            ..Start::default()
        })
        .await
    }

    /// A router that sends its email to an SMTP sink (`r.smtp`).
    pub async fn start_with_mail() -> TestRouter {
        TestRouter::start_full(Start {
            mail: true,
            ..Start::default()
        })
        .await
    }

    /// A router whose catalog is [`CATALOG`] followed by `extra` (more
    /// models and routes, for one test file).
    pub async fn start_with_catalog(extra: &str) -> TestRouter {
        TestRouter::start_prompt_cache(PromptCacheSettings::default(), extra).await
    }

    /// A router with these prompt-cache affinity settings and catalog extras.
    pub async fn start_prompt_cache(settings: PromptCacheSettings, extra: &str) -> TestRouter {
        TestRouter::start_full(Start {
            extra_catalog: extra,
            settings: AppSettings {
                prompt_cache: settings,
                ..AppSettings::default()
            },
            ..Start::default()
        })
        .await
    }

    /// A router with catalog extras and these video settings.
    pub async fn start_videos(
        extra: &str,
        videos: router_server::videos::VideoSettings,
    ) -> TestRouter {
        TestRouter::start_full(Start {
            extra_catalog: extra,
            settings: AppSettings {
                videos,
                ..AppSettings::default()
            },
            ..Start::default()
        })
        .await
    }

    /// A router whose channel destinations may (or may not) be loopback.
    pub async fn start_channel_urls(allow_loopback: bool) -> TestRouter {
        TestRouter::start_full(Start {
            settings: AppSettings {
                channel_url_allow_loopback: allow_loopback,
                ..AppSettings::default()
            },
            ..Start::default()
        })
        .await
    }

    /// A router with these upload settings (object store, TTLs).
    pub async fn start_uploads(uploads: UploadSettings) -> TestRouter {
        TestRouter::start_full(Start {
            settings: AppSettings {
                uploads,
                ..AppSettings::default()
            },
            ..Start::default()
        })
        .await
    }

    /// A router under these connection limits (timeouts, caps).
    pub async fn start_connections(connections: ConnectionLimits) -> TestRouter {
        TestRouter::start_full(Start {
            connections,
            ..Start::default()
        })
        .await
    }

    async fn start_full(start: Start<'_>) -> TestRouter {
        let Start {
            listen,
            mail,
            extra_catalog,
            settings,
            connections,
        } = start;
        let uploads = settings.uploads.clone();
        let _ = rustls::crypto::ring::default_provider().install_default();
        router_telemetry::recorder::install();
        let mock = MockSupplier::start("127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let db = TestDatabase::new().await;
        // As in production: key lookups are cached, invalidated by LISTEN.
        db.database().listen_for_changes().await.unwrap();
        let text = format!("{CATALOG}\n{extra_catalog}").replace("{BASE}", &mock.base_url());
        let catalog_path =
            std::env::temp_dir().join(format!("router-test-{}.toml", uuid::Uuid::new_v4()));
        std::fs::write(&catalog_path, &text).unwrap();
        let smtp = match mail {
            true => Some(
                SmtpSink::start("127.0.0.1:0".parse().unwrap())
                    .await
                    .unwrap(),
            ),
            false => None,
        };
        let mailer = smtp.as_ref().map(|sink| {
            Arc::new(Mailer::from_url(&sink.url(), "Router <router@localhost>").unwrap())
        });
        let listener = tokio::net::TcpListener::bind(listen).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let base = format!("http://{addr}");
        let app = build_app(
            db.database().clone(),
            catalog_path.to_str().unwrap(),
            addr,
            AppSettings { mailer, ..settings },
        )
        .await;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(router_server::serve(
            listener,
            app.clone(),
            connections,
            async move {
                let _ = rx.await;
            },
        ));
        TestRouter {
            app,
            base,
            mock,
            smtp,
            uploads,
            db,
            client: reqwest::Client::new(),
            shutdown: Some(tx),
            catalog_path,
        }
    }

    /// Replace the catalog file this router reloads from (`{BASE}` is the
    /// mock supplier's URL).
    pub fn write_catalog(&self, text: &str) {
        let text = text.replace("{BASE}", &self.mock.base_url());
        std::fs::write(&self.catalog_path, text).unwrap();
    }

    /// `POST /admin/catalog/reload`.
    pub async fn reload_catalog(&self) -> (u16, Value) {
        self.admin(reqwest::Method::POST, "/admin/catalog/reload", None)
            .await
    }

    /// Another router instance (its own pool, key cache, batching and
    /// supplier client) on this router's database and mock supplier, as a
    /// second process would be.
    pub async fn second_router(&self) -> SecondRouter {
        self.second_router_with(true).await
    }

    /// A second instance, with or without the test hooks
    /// (`ROUTER_ADMIN_TEST_HOOKS`).
    pub async fn second_router_with(&self, test_hooks: bool) -> SecondRouter {
        let database = router_store::Database::connect(self.db.url(), 8)
            .await
            .unwrap();
        database.listen_for_changes().await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let base = format!("http://{addr}");
        let app = build_app(
            database,
            self.catalog_path.to_str().unwrap(),
            addr,
            AppSettings {
                test_hooks,
                uploads: self.uploads.clone(),
                videos: self.app.videos,
                ..AppSettings::default()
            },
        )
        .await;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(router_server::serve(
            listener,
            app,
            ConnectionLimits::default(),
            async move {
                let _ = rx.await;
            },
        ));
        SecondRouter {
            base,
            client: reqwest::Client::new(),
            _shutdown: tx,
        }
    }

    pub async fn admin(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self
            .client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(ADMIN_TOKEN);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// One pass of background job `name` (`POST /admin/jobs/{name}/run`):
    /// asserts 200, returns what it processed.
    pub async fn run_job(&self, name: &str) -> u64 {
        let (status, body) = self
            .admin(
                reqwest::Method::POST,
                &format!("/admin/jobs/{name}/run"),
                None,
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body["processed"].as_u64().unwrap()
    }

    /// A new browser session of `account_id`, as its `Cookie` header value.
    pub async fn session_cookie(&self, account_id: &str) -> String {
        let (status, body) = self
            .admin(
                reqwest::Method::POST,
                &format!("/admin/accounts/{account_id}/sessions"),
                Some(json!({})),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        format!(
            "{}={}",
            body["cookie_name"].as_str().unwrap(),
            body["cookie_value"].as_str().unwrap()
        )
    }

    /// A new account with `credits` nano-USD and a key with `scopes`.
    pub async fn customer(&self, credits: i64, scopes: &[&str]) -> Customer {
        let (status, account) = self
            .admin(reqwest::Method::POST, "/admin/accounts", Some(json!({"email": format!("{}@example.com", uuid::Uuid::new_v4()), "email_verified": true})))
            .await;
        assert_eq!(status, 201, "{account}");
        let account_id = account["id"].as_str().unwrap().to_owned();
        if credits > 0 {
            let (status, body) = self
                .admin(
                    reqwest::Method::POST,
                    &format!("/admin/accounts/{account_id}/credits"),
                    Some(json!({"amount_nano_usd": credits})),
                )
                .await;
            assert_eq!(status, 200, "{body}");
        }
        let key = self
            .new_key(json!({"account_id": account_id, "scopes": scopes}))
            .await;
        Customer {
            account_id,
            key: key["key"].as_str().unwrap().to_owned(),
        }
    }

    /// The upstream model of each call the mock received, in order.
    pub fn called_models(&self) -> Vec<String> {
        let calls = self.mock.calls();
        calls
            .iter()
            .map(|c| c.body["model"].as_str().unwrap().to_owned())
            .collect()
    }

    /// `POST /admin/api-keys` with `body`, which must be created; the new key.
    pub async fn new_key(&self, body: Value) -> Value {
        let (status, key) = self
            .admin(reqwest::Method::POST, "/admin/api-keys", Some(body))
            .await;
        assert_eq!(status, 201, "{key}");
        key
    }

    pub async fn rich_customer(&self) -> Customer {
        self.customer(1_000_000_000_000, &["inference"]).await
    }

    pub async fn chat(&self, key: &str, body: &Value) -> reqwest::Response {
        self.client
            .post(format!("{}/v1/chat/completions", self.base))
            .bearer_auth(key)
            .json(body)
            .send()
            .await
            .unwrap()
    }

    /// `method path` with a Bearer key and no body.
    pub async fn call(&self, method: reqwest::Method, path: &str, key: &str) -> reqwest::Response {
        send_with_key(&self.client, method, format!("{}{path}", self.base), key).await
    }

    /// `GET path` with a Bearer key.
    pub async fn get(&self, path: &str, key: &str) -> reqwest::Response {
        self.call(reqwest::Method::GET, path, key).await
    }

    /// `GET path` without credentials.
    pub async fn get_plain(&self, path: &str) -> reqwest::Response {
        let request = self.client.get(format!("{}{path}", self.base));
        request.send().await.unwrap()
    }

    /// `DELETE path` on the admin API; its status.
    pub async fn admin_delete(&self, path: &str) -> u16 {
        self.admin(reqwest::Method::DELETE, path, None).await.0
    }

    /// `GET path` with a session cookie.
    pub async fn get_with_cookie(&self, path: &str, cookie: &str) -> reqwest::Response {
        let request = self.client.get(format!("{}{path}", self.base));
        request.header("cookie", cookie).send().await.unwrap()
    }

    /// POST a JSON body to `path` with a Bearer key.
    pub async fn post(&self, path: &str, key: &str, body: &Value) -> reqwest::Response {
        self.client
            .post(format!("{}{path}", self.base))
            .bearer_auth(key)
            .json(body)
            .send()
            .await
            .unwrap()
    }

    /// POST to a Messages path as the anthropic SDK does: `x-api-key` and
    /// `anthropic-version: 2023-06-01`.
    pub async fn messages_at(&self, path: &str, key: &str, body: &Value) -> reqwest::Response {
        self.client
            .post(format!("{}{path}", self.base))
            .header("x-api-key", key)
            .header("anthropic-version", "2023-06-01")
            .json(body)
            .send()
            .await
            .unwrap()
    }

    pub async fn messages(&self, key: &str, body: &Value) -> reqwest::Response {
        self.messages_at("/v1/messages", key, body).await
    }

    pub async fn account(&self, id: &str) -> Value {
        let (status, body) = self
            .admin(reqwest::Method::GET, &format!("/admin/accounts/{id}"), None)
            .await;
        assert_eq!(status, 200, "{body}");
        body
    }

    pub async fn request_record(&self, id: &str) -> Value {
        // Void-on-disconnect runs in a spawned task: poll briefly for a final state.
        for _ in 0..50 {
            let (status, body) = self
                .admin(reqwest::Method::GET, &format!("/admin/requests/{id}"), None)
                .await;
            assert_eq!(status, 200, "{body}");
            if body["status"] != "reserved" {
                return body;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("request {id} stayed reserved");
    }
}

/// `method url` with a Bearer key and no body, from any router's client.
pub async fn send_with_key(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    key: &str,
) -> reqwest::Response {
    let request = client.request(method, url);
    request.bearer_auth(key).send().await.unwrap()
}

/// A Chat `hello("m-text")` sent in its own task, to overlap with the test.
pub fn spawn_hello(
    client: &reqwest::Client,
    base: &str,
    key: &str,
) -> tokio::task::JoinHandle<reqwest::Result<reqwest::Response>> {
    let request = client.post(format!("{base}/v1/chat/completions"));
    tokio::spawn(request.bearer_auth(key).json(&hello("m-text")).send())
}

/// A mock supplier on loopback answering every call with `text` (and the
/// TLS provider the router's clients need installed).
pub async fn mock_answering(text: &str) -> MockSupplier {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mock = MockSupplier::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    mock.set_default(router_mock_supplier::Script::Reply(
        router_mock_supplier::MockReply::text(text),
    ));
    mock
}

/// A Chat `hello(model)` to the router at `base` with `key` and the extra
/// `headers` (name, value).
pub async fn hello_with_headers(
    client: &reqwest::Client,
    base: &str,
    key: &str,
    model: &str,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut request = client
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth(key);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.json(&hello(model)).send().await.unwrap()
}

/// Assert that `resp` is a 200, showing the body of any other answer.
pub async fn assert_answered(resp: reqwest::Response, what: &str) {
    assert_eq!(resp.status(), 200, "{what}: {}", resp.text().await.unwrap());
}

/// The values of the Prometheus samples `name{labels...}` in `text` whose
/// labels include `labels`.
pub fn metric_samples(text: &str, name: &str, labels: &[(&str, &str)]) -> Vec<f64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (series_name, rest) = series.split_once('{').unwrap_or((series, ""));
            (series_name == name
                && labels
                    .iter()
                    .all(|(k, v)| rest.contains(&format!("{k}=\"{v}\""))))
            .then(|| value.parse::<f64>().ok())
            .flatten()
        })
        .collect()
}

/// An `inference` key of a new account for `email` holding `credits`
/// nano-USD, made over the admin API of a router process at `admin_base`.
pub async fn funded_key_over_http(
    client: &reqwest::Client,
    admin_base: &str,
    email: &str,
    credits: i64,
) -> String {
    funded_account_over_http(client, admin_base, email, credits)
        .await
        .1
}

/// A new account's id and an `inference` key of it, as
/// [`funded_key_over_http`] makes them.
pub async fn funded_account_over_http(
    client: &reqwest::Client,
    admin_base: &str,
    email: &str,
    credits: i64,
) -> (String, String) {
    let admin = |path: String, body: Value| {
        client
            .post(format!("{admin_base}{path}"))
            .bearer_auth(ADMIN_TOKEN)
            .json(&body)
            .send()
    };
    let account: Value = admin("/admin/accounts".into(), json!({"email": email}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = account["id"].as_str().unwrap();
    admin(
        format!("/admin/accounts/{id}/credits"),
        json!({"amount_nano_usd": credits}),
    )
    .await
    .unwrap();
    let key: Value = admin(
        "/admin/api-keys".into(),
        json!({"account_id": id, "scopes": ["inference"]}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    (id.to_owned(), key["key"].as_str().unwrap().to_owned())
}

pub fn request_id(resp: &reqwest::Response) -> String {
    resp.headers()
        .get("x-request-id")
        .expect("x-request-id header")
        .to_str()
        .unwrap()
        .to_owned()
}

pub fn hello(model: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "hello"}]})
}

/// A new customer's [`hello`] (with `credits` and `scopes`) refused with
/// `status` and `code` before any supplier call; the error body.
pub async fn refused_hello(credits: i64, scopes: &[&str], status: u16, code: &str) -> Value {
    let r = TestRouter::start().await;
    let c = r.customer(credits, scopes).await;
    let body = expect_error(r.chat(&c.key, &hello("m-text")).await, status, code).await;
    assert_eq!(r.mock.call_count(), 0);
    body
}

/// [`hello`] with `stream: true`.
pub fn hello_stream(model: &str) -> Value {
    json!({"model": model, "stream": true, "messages": [{"role": "user", "content": "hello"}]})
}

/// The request failed with nothing charged and nothing left held (the
/// customer started with a rich balance).
pub async fn assert_nothing_charged(r: &TestRouter, c: &Customer, id: &str) {
    let record = r.request_record(id).await;
    assert_eq!(record["status"], "failed");
    assert!(record["charged_nano_usd"].is_null());
    let account = r.account(&c.account_id).await;
    assert_eq!(account["held_nano_usd"], 0);
    assert_eq!(account["balance_nano_usd"], 1_000_000_000_000i64);
}

/// Assert the OpenAI error envelope with `code` and `x-request-id` (P-01).
pub async fn expect_error(resp: reqwest::Response, status: u16, code: &str) -> Value {
    let actual = resp.status().as_u16();
    assert!(resp.headers().contains_key("x-request-id"));
    let body: Value = resp.json().await.unwrap();
    assert_eq!(actual, status, "{body}");
    let error = &body["error"];
    assert_eq!(error["code"], code, "{body}");
    for field in ["message", "type", "param", "code"] {
        assert!(error.get(field).is_some(), "missing error.{field}: {body}");
    }
    body
}

/// Assert the Messages error envelope (D-34): `{type:"error", error:{type,
/// message}}`, no `code`, and both request-ID headers (CF-12).
pub async fn expect_messages_error(resp: reqwest::Response, status: u16, kind: &str) -> Value {
    let actual = resp.status().as_u16();
    let id = resp
        .headers()
        .get("request-id")
        .expect("request-id header")
        .clone();
    assert_eq!(resp.headers().get("x-request-id"), Some(&id));
    let body: Value = resp.json().await.unwrap();
    assert_eq!(actual, status, "{body}");
    assert_eq!(body["type"], "error", "{body}");
    assert_eq!(body["error"]["type"], kind, "{body}");
    assert!(body["error"]["message"].is_string(), "{body}");
    assert!(body["error"].get("code").is_none(), "{body}");
    body
}

/// A minimal valid Messages body.
pub fn messages_hello(model: &str) -> Value {
    json!({"model": model, "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]})
}

/// Split an SSE body into `(event name, data JSON)` pairs; frames without an
/// `event:` line get an empty name, and `[DONE]` is returned as a string.
pub fn sse_events(text: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for frame in text.split("\n\n") {
        let mut name = String::new();
        let mut data = String::new();
        for line in frame.lines() {
            if let Some(v) = line.strip_prefix("event:") {
                name = v.trim().to_owned();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim_start());
            }
        }
        if data.is_empty() {
            continue;
        }
        let value = serde_json::from_str(&data).unwrap_or(Value::String(data));
        out.push((name, value));
    }
    out
}

/// Read an SSE body into its `data:` payloads.
pub async fn data_lines(resp: reqwest::Response) -> Vec<String> {
    let text = resp.text().await.unwrap_or_default();
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(str::to_owned)
        .collect()
}

/// The real `router` binary, serving [`CATALOG`] (its supplier at
/// `supplier_base`) on `db_url` with the operator token and `env` added;
/// ready when returned. Its stderr is read as it is written (a full pipe
/// would stall the router's logging, and so the router) and handed back
/// when the process ends. Killed when dropped.
pub struct RouterProcess {
    pub child: tokio::process::Child,
    pub base: String,
    pub stderr: tokio::task::JoinHandle<String>,
}

pub async fn spawn_router_process(
    db_url: &str,
    supplier_base: &str,
    env: &[(&str, &str)],
) -> RouterProcess {
    spawn_router_process_with_catalog(db_url, &CATALOG.replace("{BASE}", supplier_base), env).await
}

/// [`spawn_router_process`] with the catalog `catalog_text`.
pub async fn spawn_router_process_with_catalog(
    db_url: &str,
    catalog_text: &str,
    env: &[(&str, &str)],
) -> RouterProcess {
    spawn_router_process_until(db_url, catalog_text, env, "/readyz").await
}

/// [`spawn_router_process`], returned once it answers `/healthz` (alive,
/// not necessarily ready: its database may be unreachable).
pub async fn spawn_router_process_alive(
    db_url: &str,
    supplier_base: &str,
    env: &[(&str, &str)],
) -> RouterProcess {
    let catalog = CATALOG.replace("{BASE}", supplier_base);
    spawn_router_process_until(db_url, &catalog, env, "/healthz").await
}

async fn spawn_router_process_until(
    db_url: &str,
    catalog_text: &str,
    env: &[(&str, &str)],
    probe: &str,
) -> RouterProcess {
    let dir = std::env::temp_dir().join(format!("router-process-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let catalog = dir.join("catalog.toml");
    std::fs::write(&catalog, catalog_text).unwrap();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_router"));
    command
        .arg("serve")
        .env("DATABASE_URL", db_url)
        .env("ROUTER_LISTEN", format!("127.0.0.1:{port}"))
        .env("ROUTER_CATALOG", &catalog)
        .env("ROUTER_ADMIN_TOKEN", ADMIN_TOKEN)
        .env("ROUTER_DB_POOL_SIZE", "4")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().unwrap();
    let mut pipe = child.stderr.take().unwrap();
    let stderr = tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text).await;
        text
    });
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        if let Ok(resp) = client.get(format!("{base}{probe}")).send().await
            && resp.status() == 200
        {
            return RouterProcess {
                child,
                base,
                stderr,
            };
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("router did not answer {probe}");
}

/// Runs a raw SQL statement on the router's database (a test playing
/// another process, or the clock); the rows it touched.
pub async fn sql(r: &TestRouter, statement: &str) -> usize {
    use diesel_async::RunQueryDsl;
    let mut conn = r.db.database().connection().await.unwrap();
    diesel::sql_query(statement)
        .execute(&mut conn)
        .await
        .unwrap()
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

/// The one `n` a raw SQL query on the router's database selects.
pub async fn count(r: &TestRouter, query: &str) -> i64 {
    use diesel_async::RunQueryDsl;
    let mut conn = r.db.database().connection().await.unwrap();
    diesel::sql_query(query)
        .get_result::<Count>(&mut conn)
        .await
        .unwrap()
        .n
}

/// A loopback listener that only counts the connections it accepts (and
/// closes them): where a request must never go.
pub struct Canary {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    accepted: Arc<std::sync::atomic::AtomicUsize>,
}

impl Canary {
    pub async fn start() -> Canary {
        Canary::start_on("127.0.0.1:0").await
    }

    /// A canary listening on `addr` (`0.0.0.0:0` to catch what Linux
    /// delivers to a local listener from the unspecified address).
    pub async fn start_on(addr: &str) -> Canary {
        let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = accepted.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                drop(socket);
            }
        });
        Canary { base, accepted }
    }

    pub fn port(&self) -> u16 {
        let port = self.base.rsplit(':').next().unwrap();
        port.parse().unwrap()
    }

    /// Connections accepted so far.
    pub fn hits(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::SeqCst)
    }
}
