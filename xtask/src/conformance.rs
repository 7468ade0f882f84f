//! `cargo xtask conformance`: the official OpenAI and Anthropic SDKs, in Python and in Node,
//! against the router, over the matrix inbound protocol x route protocol x stream off/on x
//! case whose expected outcomes `conformance/matrix.json` declares.
//!
//! Locally it starts what it needs: PostgreSQL (`db`), the mock supplier and the router
//! (debug builds) on free loopback ports with `fixtures/conformance-catalog.toml`, and an
//! account with credits and an inference key. With `--against URL --key KEY` it runs the same
//! clients against a deployed router instead, with no mock to script (see the clients' docs).
//!
//! The SDKs are pinned in `conformance/python/requirements.txt` and
//! `conformance/node/package-lock.json` and installed once into `target/conformance/` (venv
//! and node_modules); a run reinstalls only when those files change. The clients write one
//! JSON line per cell; this module compares each with the declared expectation, prints the
//! matrix and fails on any unexpected cell.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Map, Value};
use signal_hook::consts::signal::{SIGHUP, SIGINT, SIGTERM};

use crate::services::{
    Children, answers, for_each_flag, free_loopback_port, http, provision, provision_with_policy,
    random_hex,
};
use crate::{db, display, run_checked, target_dir, workspace_root};

const MATRIX: &str = "conformance/matrix.json";
const CATALOG: &str = "fixtures/conformance-catalog.toml";
/// The catalog's placeholder for the mock supplier's base URL.
const MOCK_URL_PLACEHOLDER: &str = "{MOCK_SUPPLIER_URL}";
/// The catalog's supplier reads its key from this variable.
const SUPPLIER_KEY_ENV: &str = "CONFORMANCE_SUPPLIER_API_KEY";
/// The clients read the router API key from this variable (kept off their command line).
const API_KEY_ENV: &str = "CONFORMANCE_API_KEY";
const PYTHON_REQUIREMENTS: &str = "conformance/python/requirements.txt";
const PYTHON_CLIENT: &str = "conformance/python/conformance.py";
/// Documentation search and the OpenAPI document over raw HTTP (Python venv, after the matrix).
const PYTHON_DOCS_CHECKS: &str = "conformance/python/docs_openapi.py";
/// The docs checks read their extra keys from these (a no-scope key with no credit, and a
/// key whose IP allowlist excludes loopback).
const DOCS_KEY_ENV: &str = "CONFORMANCE_DOCS_KEY";
/// Uploads against an S3-compatible store: `moto` in server mode, from the venv.
const PYTHON_S3_CHECKS: &str = "conformance/python/uploads_s3.py";
const S3_BUCKET: &str = "router-conformance";
/// Video jobs through the official SDK (create, retrieve, download_content), after uploads:
/// the router keeps video content in the same S3 store.
const PYTHON_VIDEO_CHECKS: &str = "conformance/python/videos_sdk.py";
const DOCS_IP_KEY_ENV: &str = "CONFORMANCE_DOCS_IP_KEY";
const NODE_PACKAGE: &str = "conformance/node/package.json";
const NODE_LOCK: &str = "conformance/node/package-lock.json";
const NODE_CLIENT: &str = "conformance/node/conformance.cjs";
/// $1000 in nano-USD: every cell reserves its worst case (8192 output tokens).
const CREDITS_NANO_USD: i64 = 1_000_000_000_000;
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// A warm run takes well under a minute; this only stops a hung client.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(600);
const POLL: Duration = Duration::from_millis(100);
/// How much of a failed cell's detail the report shows; the results files have all of it.
const DETAIL_CHARS: usize = 300;

/// One SDK language: how to install it and how to run its client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Client {
    Python,
    Node,
}

impl Client {
    const ALL: [Client; 2] = [Client::Python, Client::Node];

    fn name(self) -> &'static str {
        match self {
            Client::Python => "python",
            Client::Node => "node",
        }
    }

    fn parse(name: &str) -> Result<Client> {
        Client::ALL
            .into_iter()
            .find(|client| client.name() == name)
            .with_context(|| format!("unknown client `{name}`; expected python or node"))
    }
}

struct Options {
    /// A deployed router's base URL; `None` starts a local one with a mock supplier.
    against: Option<String>,
    key: Option<String>,
    /// `chat=MODEL,responses=MODEL,messages=MODEL`, passed to the clients.
    models: Option<String>,
    clients: Vec<Client>,
    /// Only cells whose id (`inbound/case/route/json|stream`) contains this text.
    only: Option<String>,
}

/// Where the clients send their requests.
pub(crate) struct Target {
    pub(crate) base_url: String,
    pub(crate) api_key: String,
    /// The operator token, when we started the router.
    pub(crate) admin_token: Option<String>,
    /// The mock supplier's control URL when we started it.
    pub(crate) mock_url: Option<String>,
    /// The docs checks' no-scope key and IP-restricted key, when we provisioned them.
    docs_keys: Option<(String, String)>,
    /// The S3 endpoint (moto) the router stores uploads in, and the operator token, when
    /// we started them.
    s3: Option<(String, String)>,
}

/// Returns whether every cell came out as declared.
pub fn run(args: &[String]) -> Result<bool> {
    let options = parse(args)?;
    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [SIGINT, SIGTERM, SIGHUP] {
        signal_hook::flag::register_conditional_shutdown(signal, 1, Arc::clone(&stop))?;
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }

    let root = workspace_root();
    let matrix = Matrix::load(&root.join(MATRIX))?;
    let work = target_dir().join("conformance");
    fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    let mut runners = Vec::new();
    for client in &options.clients {
        runners.push((*client, install(*client, &work)?));
    }

    // Dropping `children` stops the router and the mock, on every way out of this function.
    let mut children = Children::default();
    let target = match (&options.against, &options.key) {
        (Some(url), Some(key)) => Target {
            base_url: url.trim_end_matches('/').to_owned(),
            api_key: key.clone(),
            admin_token: None,
            mock_url: None,
            docs_keys: None,
            s3: None,
        },
        (Some(_), None) => bail!("--against needs --key KEY (or {API_KEY_ENV})"),
        (None, _) => {
            // moto comes with the Python venv; without it the router keeps no uploads.
            let python = options
                .clients
                .contains(&Client::Python)
                .then(|| work.join("venv").join("bin").join("python"));
            start_local(
                &work,
                &mut children,
                &stop,
                python.as_deref(),
                Extras::default(),
            )?
        }
    };

    let mut results = Vec::new();
    for (client, mut command) in runners {
        let file = work.join(format!("results-{}.jsonl", client.name()));
        command
            .arg("--matrix")
            .arg(root.join(MATRIX))
            .arg("--results")
            .arg(&file)
            .args(["--base-url", &target.base_url])
            .env(API_KEY_ENV, &target.api_key);
        if let Some(mock_url) = &target.mock_url {
            command.args(["--mock-url", mock_url]);
        }
        if let Some(models) = &options.models {
            command.args(["--models", models]);
        }
        if let Some(only) = &options.only {
            command.args(["--only", only]);
        }
        run_client(client, command, &file, &mut children, &stop)?;
        // A client that died part-way still reported the cells it finished; the rest show
        // up as missing.
        results.push((client, read_results(&file)?));
    }

    // The docs and OpenAPI checks need the Python venv; a filtered run is about cells.
    let checks = if options.clients.contains(&Client::Python) && options.only.is_none() {
        let docs_env: Vec<(&str, &str)> = match &target.docs_keys {
            Some((docs_key, ip_key)) => vec![(DOCS_KEY_ENV, docs_key), (DOCS_IP_KEY_ENV, ip_key)],
            None => Vec::new(),
        };
        let mut checks = run_python_checks(
            &work,
            &target,
            (PYTHON_DOCS_CHECKS, "docs"),
            &docs_env,
            &mut children,
            &stop,
        )?;
        if let Some((endpoint, admin_token)) = &target.s3 {
            let mut s3_env = vec![
                ("CONFORMANCE_ADMIN_TOKEN", admin_token.as_str()),
                ("CONFORMANCE_S3_ENDPOINT", endpoint.as_str()),
                ("CONFORMANCE_S3_BUCKET", S3_BUCKET),
            ];
            s3_env.extend(S3_CREDENTIALS);
            checks.absorb(run_python_checks(
                &work,
                &target,
                (PYTHON_S3_CHECKS, "s3"),
                &s3_env,
                &mut children,
                &stop,
            )?);
            checks.absorb(run_python_checks(
                &work,
                &target,
                (PYTHON_VIDEO_CHECKS, "videos"),
                &[],
                &mut children,
                &stop,
            )?);
        }
        checks
    } else {
        Checks::default()
    };

    let report = Report::new(&matrix, &results, options.only.is_some());
    print!("{}", report.render(&matrix));
    print!("{}", checks.render());
    if !report.unexpected.is_empty() {
        println!(
            "full details: {}",
            work.join("results-<client>.jsonl").display()
        );
        if target.mock_url.is_some() {
            println!("logs: {}", work.join("logs").display());
        }
    }
    println!("took {}s", started.elapsed().as_secs());
    // Last, alone on its line, in the form CI reads as a test runner's summary.
    println!(
        "conformance: {} passed, {} failed, {} skipped",
        report.expected + checks.passed.len(),
        report.unexpected.len() + checks.failed.len(),
        report.skipped + checks.skipped.len()
    );
    Ok(report.unexpected.is_empty() && checks.failed.is_empty())
}

/// The outcomes of `docs_openapi.py`, by check name (with the detail of a failure).
#[derive(Default)]
struct Checks {
    passed: Vec<String>,
    failed: Vec<(String, String)>,
    skipped: Vec<String>,
}

impl Checks {
    /// Adds another script's checks to these.
    fn absorb(&mut self, other: Checks) {
        self.passed.extend(other.passed);
        self.failed.extend(other.failed);
        self.skipped.extend(other.skipped);
    }

    fn render(&self) -> String {
        let mut out = format!(
            "docs and OpenAPI (python, raw HTTP): {} passed, {} failed, {} skipped\n",
            self.passed.len(),
            self.failed.len(),
            self.skipped.len()
        );
        for (name, detail) in &self.failed {
            let detail: String = detail.chars().take(DETAIL_CHARS).collect();
            let _ = writeln!(out, "  FAIL {name}: {detail}");
        }
        out
    }
}

/// Runs the check script `script` with the venv's interpreter against
/// `target` (its results in `results-{name}.jsonl`), with `env` besides
/// the API key.
fn run_python_checks(
    work: &Path,
    target: &Target,
    (script, name): (&str, &str),
    env: &[(&str, &str)],
    children: &mut Children,
    stop: &AtomicBool,
) -> Result<Checks> {
    let file = work.join(format!("results-{name}.jsonl"));
    let mut command = Command::new(work.join("venv").join("bin").join("python"));
    command
        .arg(workspace_root().join(script))
        .args(["--base-url", &target.base_url])
        .arg("--results")
        .arg(&file)
        .env(API_KEY_ENV, &target.api_key)
        .envs(env.iter().copied());
    run_client(Client::Python, command, &file, children, stop)?;
    read_checks(&file, script)
}

/// Loopback-only credentials for moto (it accepts any).
const S3_CREDENTIALS: [(&str, &str); 3] = [
    ("AWS_ACCESS_KEY_ID", "conformance"),
    ("AWS_SECRET_ACCESS_KEY", "conformance"),
    ("AWS_REGION", "us-east-1"),
];

/// The check lines a script wrote to `file`.
fn read_checks(file: &Path, script: &str) -> Result<Checks> {
    let text = fs::read_to_string(file).unwrap_or_default();
    let mut checks = Checks::default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let record: Value = serde_json::from_str(line)
            .with_context(|| format!("{}: not JSON: {line}", file.display()))?;
        let name = record["check"].as_str().unwrap_or("?").to_owned();
        match record["outcome"].as_str() {
            Some("pass") => checks.passed.push(name),
            Some("skip") => checks.skipped.push(name),
            _ => {
                let detail = record["detail"].as_str().unwrap_or("").to_owned();
                checks.failed.push((name, detail));
            }
        }
    }
    // A script that died before writing anything must not pass silently.
    ensure!(
        !(checks.passed.is_empty() && checks.failed.is_empty()),
        "{script} reported no check; see its output above"
    );
    Ok(checks)
}

fn parse(args: &[String]) -> Result<Options> {
    let mut options = Options {
        against: None,
        key: std::env::var(API_KEY_ENV)
            .ok()
            .filter(|key| !key.is_empty()),
        models: None,
        clients: Vec::new(),
        only: None,
    };
    for_each_flag(args, |flag, value| {
        match flag {
            "--against" => options.against = Some(value()?),
            "--key" => options.key = Some(value()?),
            "--catalog-models" => options.models = Some(value()?),
            "--client" => options.clients.push(Client::parse(&value()?)?),
            "--only" => options.only = Some(value()?),
            other => bail!(
                "unknown option `{other}`; expected --against URL, --key KEY, \
                 --catalog-models chat=M,responses=M,messages=M, --client python|node, --only TEXT"
            ),
        }
        Ok(())
    })?;
    if options.clients.is_empty() {
        options.clients = Client::ALL.to_vec();
    }
    if options.models.is_some() && options.against.is_none() {
        bail!("--catalog-models only applies with --against (the local catalog is fixed)");
    }
    Ok(options)
}

// ----------------------------------------------------------------------------------------
// Installing the SDKs into target/conformance (once per machine, again when the pins change)
// ----------------------------------------------------------------------------------------

/// Installs the client's pinned SDKs if needed; returns the command that runs its client.
fn install(client: Client, work: &Path) -> Result<Command> {
    let root = workspace_root();
    match client {
        Client::Python => {
            let python = python_venv(&work.join("venv"), PYTHON_REQUIREMENTS, "the Python SDKs")?;
            let mut command = Command::new(python);
            command.arg(root.join(PYTHON_CLIENT));
            Ok(command)
        }
        Client::Node => {
            let prefix = work.join("node");
            let lock = fs::read_to_string(root.join(NODE_LOCK))
                .with_context(|| format!("reading {NODE_LOCK}"))?;
            let modules = prefix.join("node_modules");
            let stamp = modules.join(".conformance-package-lock.json");
            if read_or_empty(&stamp) != lock {
                eprintln!(
                    "xtask conformance: installing the Node SDKs into {}",
                    prefix.display()
                );
                fs::create_dir_all(&prefix)?;
                fs::copy(root.join(NODE_PACKAGE), prefix.join("package.json"))?;
                fs::copy(root.join(NODE_LOCK), prefix.join("package-lock.json"))?;
                run_checked(
                    Command::new("npm")
                        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
                        .arg("--prefix")
                        .arg(&prefix)
                        .stdin(Stdio::null())
                        // Progress is not the report: keep stdout for the matrix.
                        .stdout(std::io::stderr()),
                )?;
                fs::write(&stamp, &lock)?;
            }
            let mut command = Command::new("node");
            command
                .arg(root.join(NODE_CLIENT))
                .env("NODE_PATH", modules);
            Ok(command)
        }
    }
}

/// A virtual environment at `venv` with the pins of `requirements` (a path from the
/// workspace root) installed, once per machine and again when the pins change; returns its
/// interpreter. `what` names the packages in the progress line.
pub(crate) fn python_venv(venv: &Path, requirements: &str, what: &str) -> Result<PathBuf> {
    let root = workspace_root();
    let python = venv.join("bin").join("python");
    let pins = fs::read_to_string(root.join(requirements))
        .with_context(|| format!("reading {requirements}"))?;
    let stamp = venv.join("installed-requirements.txt");
    if !(python.is_file() && read_or_empty(&stamp) == pins) {
        eprintln!("xtask: installing {what} into {}", venv.display());
        if !python.is_file() {
            run_checked(Command::new("python3").args(["-m", "venv"]).arg(venv))?;
        }
        run_checked(
            Command::new(&python)
                .args(["-m", "pip", "install", "--disable-pip-version-check"])
                .args(["--no-input", "--quiet", "--requirement"])
                .arg(root.join(requirements))
                .stdin(Stdio::null())
                .stdout(std::io::stderr()),
        )?;
        fs::write(&stamp, &pins)?;
    }
    Ok(python)
}

fn read_or_empty(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_default()
}

// ----------------------------------------------------------------------------------------
// The local router and mock supplier
// ----------------------------------------------------------------------------------------

/// Starts PostgreSQL (if needed), the mock supplier (and moto, given the venv's `python`)
/// and the router with the conformance catalog under `work`, and provisions the keys.
pub(crate) fn start_local(
    work: &Path,
    children: &mut Children,
    stop: &AtomicBool,
    python: Option<&Path>,
    extras: Extras,
) -> Result<Target> {
    let database_url = db::ensure_postgres()?;
    crate::build_debug_binaries(&["router", "mock-supplier"])?;
    let debug = target_dir().join("debug");
    let (router, supplier) = (debug.join("router"), debug.join("mock-supplier"));

    let mock_addr = format!("127.0.0.1:{}", free_loopback_port()?);
    let mut router_addr = format!("127.0.0.1:{}", free_loopback_port()?);
    while router_addr == mock_addr {
        router_addr = format!("127.0.0.1:{}", free_loopback_port()?);
    }
    let catalog = render_catalog(work, &format!("http://{mock_addr}/v1"))?;
    let logs = work.join("logs");
    fs::create_dir_all(&logs)?;

    let smtp_addr = if extras.mail {
        Some(format!("127.0.0.1:{}", free_loopback_port()?))
    } else {
        None
    };
    let mut mock = Command::new(&supplier);
    mock.args(["--listen", &mock_addr]);
    if let Some(smtp_addr) = &smtp_addr {
        mock.args(["--smtp-listen", smtp_addr]);
    }
    children.spawn_logged("mock-supplier", mock, &logs.join("mock-supplier.log"))?;
    children.wait_until("mock-supplier", stop, READY_TIMEOUT, || answers(&mock_addr))?;

    // An S3-compatible store on loopback for uploads: moto in server mode.
    let s3_endpoint = match python {
        Some(python) => {
            let moto_addr = format!("127.0.0.1:{}", free_loopback_port()?);
            let port = moto_addr.rsplit(':').next().unwrap_or_default().to_owned();
            let mut moto = Command::new(python);
            moto.args(["-m", "moto.server", "-H", "127.0.0.1", "-p", &port]);
            children.spawn_logged("moto", moto, &logs.join("moto.log"))?;
            children.wait_until("moto", stop, READY_TIMEOUT, || answers(&moto_addr))?;
            Some(format!("http://{moto_addr}"))
        }
        None => None,
    };

    let admin_token = random_hex(16)?;
    let router_command = |subcommand: &str| {
        let mut command = Command::new(&router);
        command
            .arg(subcommand)
            .env("DATABASE_URL", &database_url)
            .env("ROUTER_LISTEN", &router_addr)
            .env("ROUTER_CATALOG", &catalog)
            .env("ROUTER_ADMIN_TOKEN", &admin_token)
            // Schemathesis' auth checks send wrong tokens by the hundred from
            // this one address; its valid calls must still get in.
            .env("ROUTER_ADMIN_AUTH_FAILURES_PER_MINUTE", "0")
            .env(SUPPLIER_KEY_ENV, "conformance")
            // The Bedrock routes sign with the credentials the mock checks
            // (router_mock_supplier::MOCK_AWS_ACCESS_KEY_ID and _SECRET_ACCESS_KEY).
            .env("CONFORMANCE_AWS_ACCESS_KEY_ID", "AKIDMOCKSUPPLIER")
            .env(
                "CONFORMANCE_AWS_SECRET_ACCESS_KEY",
                "mock/supplier/secret/EXAMPLEKEY",
            )
            // The `image_url` cell: the local mock serves its images on loopback.
            .env("ROUTER_IMAGE_URL_ALLOW_LOOPBACK", "true")
            // Video jobs complete within a second or two (the mock: two polls).
            .env("ROUTER_VIDEO_POLL_INTERVAL_MS", "200");
        if let Some(smtp_addr) = &smtp_addr {
            command.env("ROUTER_SMTP_URL", format!("smtp://{smtp_addr}"));
        }
        if extras.test_hooks {
            command.env("ROUTER_ADMIN_TEST_HOOKS", "1");
        }
        if extras.folder_store && s3_endpoint.is_none() {
            let folder = work.join("objects");
            command.env(
                "ROUTER_OBJECT_STORE",
                format!("file://{}", folder.display()),
            );
        }
        if let Some(endpoint) = &s3_endpoint {
            command
                .env("ROUTER_OBJECT_STORE", format!("s3://{S3_BUCKET}/uploads"))
                .env("AWS_ENDPOINT", endpoint)
                .env("AWS_ALLOW_HTTP", "true")
                .envs(S3_CREDENTIALS);
        }
        command
    };
    let migrate_log = logs.join("router-migrate.log");
    let migrate_out = fs::File::create(&migrate_log)?;
    run_checked(
        router_command("migrate")
            .stdin(Stdio::null())
            .stdout(migrate_out.try_clone()?)
            .stderr(migrate_out),
    )
    .with_context(|| format!("see {}", migrate_log.display()))?;
    children.spawn_logged("router", router_command("serve"), &logs.join("router.log"))?;
    children.wait_until("router", stop, READY_TIMEOUT, || {
        matches!(http(&router_addr, "GET", "/readyz", None, None), Ok(response) if response.status == 200)
    })?;

    // A fresh account each run: the cluster outlives runs, and emails are unique.
    let email_user = format!("conformance+{}", random_hex(4)?);
    let api_key = provision(&router_addr, &admin_token, &email_user, CREDITS_NANO_USD)?;
    let docs_key = provision_with_policy(
        &router_addr,
        &admin_token,
        &format!("{email_user}-docs"),
        0,
        serde_json::json!({"scopes": []}),
    )?;
    let docs_ip_key = provision_with_policy(
        &router_addr,
        &admin_token,
        &format!("{email_user}-docs-ip"),
        0,
        serde_json::json!({"scopes": [], "ip_allowlist": ["192.0.2.0/24"]}),
    )?;
    Ok(Target {
        base_url: format!("http://{router_addr}"),
        api_key,
        admin_token: Some(admin_token.clone()),
        mock_url: Some(format!("http://{mock_addr}")),
        docs_keys: Some((docs_key, docs_ip_key)),
        s3: s3_endpoint.map(|endpoint| (endpoint, admin_token)),
    })
}

/// What a local router has beyond the conformance matrix's needs.
#[derive(Default, Clone, Copy)]
pub(crate) struct Extras {
    /// The router sends its email to the mock's SMTP sink.
    pub(crate) mail: bool,
    /// Uploads and video content go to a folder under the work dir (unless S3 is there).
    pub(crate) folder_store: bool,
    /// `ROUTER_ADMIN_TEST_HOOKS=1`: the browser tests backdate a request for a digest.
    pub(crate) test_hooks: bool,
}

/// Writes the catalog with the mock supplier's URL in place; returns its path.
fn render_catalog(work: &Path, mock_base_url: &str) -> Result<PathBuf> {
    let template = fs::read_to_string(workspace_root().join(CATALOG))
        .with_context(|| format!("reading {CATALOG}"))?;
    ensure!(
        template.contains(MOCK_URL_PLACEHOLDER),
        "{CATALOG} has no {MOCK_URL_PLACEHOLDER} placeholder"
    );
    let path = work.join("catalog.toml");
    fs::write(&path, template.replace(MOCK_URL_PLACEHOLDER, mock_base_url))?;
    Ok(path)
}

/// Runs one client to completion; its own stdout and stderr go straight through. A client
/// that fails is reported, not an error: its missing cells fail the run.
fn run_client(
    client: Client,
    mut command: Command,
    results: &Path,
    children: &mut Children,
    stop: &AtomicBool,
) -> Result<()> {
    let _ = fs::remove_file(results);
    eprintln!(
        "xtask conformance: running the {} client: {}",
        client.name(),
        display(&command)
    );
    let mut child = command
        .current_dir(workspace_root())
        .stdin(Stdio::null())
        .spawn()
        .with_context(|| format!("could not start the {} client", client.name()))?;
    let deadline = Instant::now() + CLIENT_TIMEOUT;
    loop {
        if let Some(status) = child.try_wait()? {
            if !status.success() {
                eprintln!(
                    "xtask conformance: the {} client failed ({status})",
                    client.name()
                );
            }
            return Ok(());
        }
        let interrupted = stop.load(Ordering::SeqCst);
        let exited = children.exited()?;
        if interrupted || exited.is_some() || Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            if let Some((name, status)) = exited {
                bail!(
                    "{name} exited ({status}) while the {} client ran",
                    client.name()
                );
            }
            if interrupted {
                bail!("interrupted");
            }
            bail!(
                "the {} client did not finish within {}s",
                client.name(),
                CLIENT_TIMEOUT.as_secs()
            );
        }
        sleep(POLL);
    }
}

// ----------------------------------------------------------------------------------------
// The matrix, the clients' results, and the report
// ----------------------------------------------------------------------------------------

/// `conformance/matrix.json`, checked for completeness on load.
struct Matrix {
    inbound: Vec<String>,
    routes: Vec<String>,
    cases: Vec<String>,
    /// Cases each client covers.
    coverage: BTreeMap<String, Vec<String>>,
    /// (inbound, case, route, stream) -> expected outcome.
    expected: BTreeMap<CellId, String>,
    /// (case, inbound) -> what a declared refusal must say besides its status and code.
    refusals: BTreeMap<(String, String), RefusalSpec>,
}

/// The inbound surface whose error envelope has no `param` (`{type, message}` only).
const PARAMLESS_INBOUND: &str = "messages";

/// The `param` and message a declared refusal must carry (`refusals` in the matrix).
#[derive(Debug, Clone, PartialEq, Eq)]
struct RefusalSpec {
    /// `None`: the error has no `param` (the Messages envelope has none).
    param: Option<String>,
    message: MessageRule,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum MessageRule {
    Exact(String),
    /// A stable part of a message that quotes the request (e.g. the SDK's version).
    Contains(String),
}

impl RefusalSpec {
    fn from_json(value: &Value) -> Result<RefusalSpec> {
        let spec = object(value)?;
        for key in spec.keys() {
            ensure!(
                ["param", "message", "message_contains"].contains(&key.as_str()),
                "unknown key `{key}`; expected param, message or message_contains"
            );
        }
        let text = |key: &str| -> Result<Option<String>> {
            spec.get(key)
                .map(|v| {
                    v.as_str()
                        .map(str::to_owned)
                        .context(format!("`{key}` is not a string"))
                })
                .transpose()
        };
        let message = match (text("message")?, text("message_contains")?) {
            (Some(exact), None) => MessageRule::Exact(exact),
            (None, Some(part)) if !part.is_empty() => MessageRule::Contains(part),
            _ => bail!("needs exactly one of `message` and a non-empty `message_contains`"),
        };
        Ok(RefusalSpec {
            param: text("param")?,
            message,
        })
    }

    /// Why a refusal with the declared status and code still differs, if it does.
    fn mismatch(&self, param: Option<&str>, message: Option<&str>) -> Option<String> {
        if param != self.param.as_deref() {
            return Some(format!(
                "param {}, declared {}",
                quoted(param),
                quoted(self.param.as_deref())
            ));
        }
        let message = message.unwrap_or_default();
        let fits = match &self.message {
            MessageRule::Exact(exact) => message == exact,
            MessageRule::Contains(part) => message.contains(part.as_str()),
        };
        (!fits).then(|| match &self.message {
            MessageRule::Exact(exact) => format!("message {message:?}, declared {exact:?}"),
            MessageRule::Contains(part) => {
                format!("message {message:?}, declared to contain {part:?}")
            }
        })
    }
}

fn quoted(param: Option<&str>) -> String {
    param.map_or_else(|| "none".to_owned(), |p| format!("`{p}`"))
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct CellId {
    inbound: String,
    case: String,
    route: String,
    stream: bool,
}

impl CellId {
    fn label(&self) -> String {
        let mode = if self.stream { "stream" } else { "json" };
        format!("{}/{}/{}/{mode}", self.inbound, self.case, self.route)
    }
}

impl Matrix {
    fn load(path: &Path) -> Result<Matrix> {
        let text =
            fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let value: Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not JSON", path.display()))?;
        Matrix::from_json(&value).with_context(|| format!("in {}", path.display()))
    }

    fn from_json(value: &Value) -> Result<Matrix> {
        let inbound = strings(&value["inbound"]).context("`inbound`")?;
        let routes = keys(&value["routes"]).context("`routes`")?;
        // The inbound x route grid's cases; image generation adds its own.
        let grid_cases = keys(&value["cases"]).context("`cases`")?;
        let mut cases = grid_cases.clone();
        let images = value.get("images");
        if let Some(images) = images {
            cases.extend(keys(&images["cases"]).context("`images.cases`")?);
        }
        let mut coverage = BTreeMap::new();
        for (client, covered) in object(&value["clients"]).context("`clients`")? {
            let covered = strings(covered).with_context(|| format!("`clients.{client}`"))?;
            for case in &covered {
                ensure!(
                    cases.contains(case),
                    "`clients.{client}` names unknown case `{case}`"
                );
            }
            coverage.insert(client.clone(), covered);
        }
        for client in Client::ALL {
            ensure!(
                coverage.contains_key(client.name()),
                "`clients` has no entry for `{}`",
                client.name()
            );
        }

        let mut expected = BTreeMap::new();
        let table = object(&value["expected"]).context("`expected`")?;
        for inbound_name in &inbound {
            let rows = object(&table[inbound_name.as_str()])
                .with_context(|| format!("`expected.{inbound_name}`"))?;
            for case in &grid_cases {
                let row = object(&rows[case.as_str()])
                    .with_context(|| format!("`expected.{inbound_name}.{case}`"))?;
                for route in &routes {
                    let at = format!("`expected.{inbound_name}.{case}.{route}`");
                    let (json, stream) = match &row[route.as_str()] {
                        Value::String(both) => (both.clone(), both.clone()),
                        Value::Object(modes) => (
                            mode(modes, "json").with_context(|| at.clone())?,
                            mode(modes, "stream").with_context(|| at.clone())?,
                        ),
                        _ => bail!("{at} is missing (a string, or {{json, stream}})"),
                    };
                    for (stream, outcome) in [(false, json), (true, stream)] {
                        check_outcome(&outcome).with_context(|| at.clone())?;
                        let id = CellId {
                            inbound: inbound_name.clone(),
                            case: case.clone(),
                            route: route.clone(),
                            stream,
                        };
                        expected.insert(id, outcome);
                    }
                }
            }
        }
        let mut refusals = BTreeMap::new();
        if let Some(images) = images {
            images_cells(images, &cases, &mut expected, &mut refusals).context("`images`")?;
        }
        if let Some(table) = value.get("refusals") {
            for (case, by_inbound) in object(table).context("`refusals`")? {
                ensure!(
                    cases.contains(case),
                    "`refusals` names unknown case `{case}`"
                );
                for (inbound_name, spec) in
                    object(by_inbound).with_context(|| format!("`refusals.{case}`"))?
                {
                    let at = || format!("`refusals.{case}.{inbound_name}`");
                    ensure!(
                        inbound.contains(inbound_name),
                        "{} is no inbound protocol",
                        at()
                    );
                    let spec = RefusalSpec::from_json(spec).with_context(at)?;
                    ensure!(
                        spec.param.is_some() == (inbound_name != PARAMLESS_INBOUND),
                        "{} must name the `param` on every surface but {PARAMLESS_INBOUND}, \
                         whose errors have none",
                        at()
                    );
                    refusals.insert((case.clone(), inbound_name.clone()), spec);
                }
            }
        }
        for (cell, outcome) in &expected {
            if refusal(outcome).is_some() {
                ensure!(
                    refusals.contains_key(&refusal_key(cell)),
                    "`expected.{}.{}.{}` is a refusal, but `refusals.{}.{}` does not say its \
                     param and message",
                    cell.inbound,
                    cell.case,
                    cell.route,
                    cell.case,
                    cell.inbound
                );
            }
        }
        Ok(Matrix {
            inbound,
            routes,
            cases,
            coverage,
            expected,
            refusals,
        })
    }
}

impl Matrix {
    /// Why a cell refused with the declared status and code still differs from its
    /// declared `param` and message; `None` for a match or for a cell that is no refusal.
    fn refusal_mismatch(&self, cell: &CellId, seen: &Observed) -> Option<String> {
        refusal(&seen.outcome)?;
        let Some(spec) = self.refusals.get(&refusal_key(cell)) else {
            return Some("no declared param and message".to_owned());
        };
        spec.mismatch(seen.param.as_deref(), seen.message.as_deref())
    }
}

/// The image generation cells (`images` in the matrix): one surface and one
/// route, both `images`. Each case's outcome is declared for JSON
/// (`expected`) and for the SDK's `stream: true` (`expected_stream`, a
/// declared refusal: image generation has no stream form; `n/a` if absent).
fn images_cells(
    images: &Value,
    cases: &[String],
    expected: &mut BTreeMap<CellId, String>,
    refusals: &mut BTreeMap<(String, String), RefusalSpec>,
) -> Result<()> {
    for (case, outcome) in object(&images["expected"]).context("`expected`")? {
        ensure!(
            cases.contains(case),
            "`expected` names unknown case `{case}`"
        );
        let outcome = outcome.as_str().context("an outcome is a string")?;
        check_outcome(outcome)?;
        let streamed = match images.get("expected_stream") {
            Some(table) => object(table)
                .context("`expected_stream`")?
                .get(case)
                .and_then(Value::as_str)
                .with_context(|| format!("`expected_stream` has no `{case}`"))?,
            None => "n/a",
        };
        check_outcome(streamed)?;
        for (stream, outcome) in [(false, outcome), (true, streamed)] {
            let id = CellId {
                inbound: IMAGES.to_owned(),
                case: case.clone(),
                route: IMAGES.to_owned(),
                stream,
            };
            expected.insert(id, outcome.to_owned());
        }
    }
    for (name, stream) in [("refusals", false), ("stream_refusals", true)] {
        let Some(table) = images.get(name) else {
            continue;
        };
        for (case, spec) in object(table)? {
            let spec = RefusalSpec::from_json(spec).with_context(|| format!("`{name}.{case}`"))?;
            ensure!(
                spec.param.is_some(),
                "`{name}.{case}` must name the `param`"
            );
            let cell = CellId {
                inbound: IMAGES.to_owned(),
                case: case.clone(),
                route: IMAGES.to_owned(),
                stream,
            };
            refusals.insert(refusal_key(&cell), spec);
        }
    }
    Ok(())
}

/// Where a cell's declared refusal is kept: by case and inbound surface,
/// except that image generation's stream form (the SDK's `stream: true`)
/// has refusals of its own.
fn refusal_key(cell: &CellId) -> (String, String) {
    if cell.inbound == IMAGES && cell.stream {
        (cell.case.clone(), format!("{IMAGES}:stream"))
    } else {
        (cell.case.clone(), cell.inbound.clone())
    }
}

/// The inbound surface and route protocol of image generation.
const IMAGES: &str = "images";

fn object(value: &Value) -> Result<&Map<String, Value>> {
    value.as_object().context("expected an object")
}

fn keys(value: &Value) -> Result<Vec<String>> {
    Ok(object(value)?.keys().cloned().collect())
}

fn strings(value: &Value) -> Result<Vec<String>> {
    value
        .as_array()
        .context("expected an array")?
        .iter()
        .map(|item| item.as_str().map(str::to_owned).context("expected strings"))
        .collect()
}

fn mode(modes: &Map<String, Value>, name: &str) -> Result<String> {
    modes
        .get(name)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .with_context(|| format!("no `{name}` outcome"))
}

/// An expectation is `pass`, `n/a`, or `STATUS CODE` (a documented refusal).
fn check_outcome(outcome: &str) -> Result<()> {
    if outcome == "pass" || outcome == "n/a" {
        return Ok(());
    }
    match refusal(outcome) {
        Some(_) => Ok(()),
        None => bail!("`{outcome}` is not pass, n/a or `STATUS CODE`"),
    }
}

/// `(status, code)` of a `STATUS CODE` outcome.
fn refusal(outcome: &str) -> Option<(u16, &str)> {
    let (status, code) = outcome.split_once(' ')?;
    let status: u16 = status.parse().ok()?;
    let valid = (400..600).contains(&status)
        && !code.is_empty()
        && code.chars().all(|c| c.is_ascii_lowercase() || c == '_');
    valid.then_some((status, code))
}

/// One line of a client's results file.
struct Observed {
    outcome: String,
    detail: Option<String>,
    /// A refusal's error `param` and `message`, as the SDK parsed them.
    param: Option<String>,
    message: Option<String>,
}

fn read_results(path: &Path) -> Result<BTreeMap<CellId, Observed>> {
    // No file: the client died before its first cell.
    let text = read_or_empty(path);
    let mut results = BTreeMap::new();
    for (number, line) in text.lines().enumerate() {
        let at = || format!("{}:{}", path.display(), number + 1);
        let record: Value = serde_json::from_str(line).with_context(at)?;
        let field = |name: &str| -> Result<String> {
            record[name]
                .as_str()
                .map(str::to_owned)
                .with_context(|| format!("{}: no `{name}`", at()))
        };
        let id = CellId {
            inbound: field("inbound")?,
            case: field("case")?,
            route: field("route")?,
            stream: record["stream"].as_bool().with_context(at)?,
        };
        let observed = Observed {
            outcome: field("outcome")?,
            detail: record["detail"].as_str().map(str::to_owned),
            param: record["param"].as_str().map(str::to_owned),
            message: record["message"].as_str().map(str::to_owned),
        };
        results.insert(id, observed);
    }
    Ok(results)
}

/// How one cell came out against its expectation.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    Pass,
    /// Refused as declared: not servable losslessly.
    Refused(u16),
    NotApplicable,
    /// No model for this route (`--against` without it).
    Skipped,
    /// Outside this client's coverage, or filtered out by `--only`.
    NotRun,
    Unexpected,
}

struct Unexpected {
    client: Client,
    cell: CellId,
    expected: String,
    observed: String,
    detail: Option<String>,
}

struct Report {
    verdicts: BTreeMap<(&'static str, CellId), Verdict>,
    clients: Vec<Client>,
    unexpected: Vec<Unexpected>,
    expected: usize,
    skipped: usize,
}

impl Report {
    fn new(
        matrix: &Matrix,
        results: &[(Client, BTreeMap<CellId, Observed>)],
        filtered: bool,
    ) -> Report {
        let mut report = Report {
            verdicts: BTreeMap::new(),
            clients: results.iter().map(|(client, _)| *client).collect(),
            unexpected: Vec::new(),
            expected: 0,
            skipped: 0,
        };
        for (client, observed) in results {
            let covered = matrix
                .coverage
                .get(client.name())
                .map_or(&[][..], Vec::as_slice);
            for (cell, expected) in &matrix.expected {
                let verdict = match observed.get(cell) {
                    _ if !covered.contains(&cell.case) => Verdict::NotRun,
                    None if filtered => Verdict::NotRun,
                    None => {
                        report.unexpected.push(Unexpected {
                            client: *client,
                            cell: cell.clone(),
                            expected: expected.clone(),
                            observed: "missing".to_owned(),
                            detail: Some("the client reported nothing for this cell".to_owned()),
                        });
                        Verdict::Unexpected
                    }
                    Some(seen) if seen.outcome == "skip" => Verdict::Skipped,
                    Some(seen) if &seen.outcome == expected => {
                        match matrix.refusal_mismatch(cell, seen) {
                            Some(why) => {
                                report.unexpected.push(Unexpected {
                                    client: *client,
                                    cell: cell.clone(),
                                    expected: expected.clone(),
                                    observed: format!("{} ({why})", seen.outcome),
                                    detail: seen.detail.clone(),
                                });
                                Verdict::Unexpected
                            }
                            None => match refusal(expected) {
                                Some((status, _)) => Verdict::Refused(status),
                                None if expected == "n/a" => Verdict::NotApplicable,
                                None => Verdict::Pass,
                            },
                        }
                    }
                    Some(seen) => {
                        report.unexpected.push(Unexpected {
                            client: *client,
                            cell: cell.clone(),
                            expected: expected.clone(),
                            observed: seen.outcome.clone(),
                            detail: seen.detail.clone(),
                        });
                        Verdict::Unexpected
                    }
                };
                match verdict {
                    Verdict::Pass | Verdict::Refused(_) => report.expected += 1,
                    Verdict::NotApplicable | Verdict::Skipped => report.skipped += 1,
                    Verdict::NotRun | Verdict::Unexpected => {}
                }
                report
                    .verdicts
                    .insert((client.name(), cell.clone()), verdict);
            }
        }
        report
    }

    fn render(&self, matrix: &Matrix) -> String {
        const INBOUND: usize = 13;
        // The longest case name and a space.
        let case_width = matrix.cases.iter().map(String::len).max().unwrap_or(0) + 1;
        let label = INBOUND + case_width;
        const CELL: usize = 9;
        let mut out = String::new();
        for client in &self.clients {
            let _ = writeln!(out, "\n{} client ({})", client.name(), pins(*client));
            let mut head = format!("{:label$}", "inbound \\ route");
            let mut modes = format!("{:label$}", "");
            for route in &matrix.routes {
                let _ = write!(head, "{:w$}", route, w = 2 * CELL);
                let _ = write!(modes, "{:CELL$}{:CELL$}", "json", "stream");
            }
            let _ = writeln!(out, "{}", head.trim_end());
            let _ = writeln!(out, "{}", modes.trim_end());
            for inbound in &matrix.inbound {
                for case in &matrix.cases {
                    let mut line = format!("{inbound:INBOUND$}{case:case_width$}");
                    let mut any_run = false;
                    for route in &matrix.routes {
                        for stream in [false, true] {
                            let id = CellId {
                                inbound: inbound.clone(),
                                case: case.clone(),
                                route: route.clone(),
                                stream,
                            };
                            let verdict = self.verdicts.get(&(client.name(), id));
                            let text = match verdict {
                                Some(Verdict::Pass) => "pass".to_owned(),
                                Some(Verdict::Refused(status)) => format!("n/s {status}"),
                                Some(Verdict::NotApplicable) => "n/a".to_owned(),
                                Some(Verdict::Skipped) => "skip".to_owned(),
                                Some(Verdict::Unexpected) => "FAIL".to_owned(),
                                Some(Verdict::NotRun) | None => "-".to_owned(),
                            };
                            any_run |= !matches!(verdict, Some(Verdict::NotRun) | None);
                            let _ = write!(line, "{text:CELL$}");
                        }
                    }
                    if any_run {
                        let _ = writeln!(out, "{}", line.trim_end());
                    }
                }
            }
            // Image generation: its own surface and route, JSON only.
            for ((name, id), verdict) in &self.verdicts {
                if *name != client.name() || id.inbound != IMAGES || id.stream {
                    continue;
                }
                let text = match verdict {
                    Verdict::Pass => "pass".to_owned(),
                    Verdict::Refused(status) => format!("n/s {status}"),
                    Verdict::NotApplicable => "n/a".to_owned(),
                    Verdict::Skipped => "skip".to_owned(),
                    Verdict::Unexpected => "FAIL".to_owned(),
                    Verdict::NotRun => continue,
                };
                let _ = writeln!(out, "{:label$}{text}", format!("images {}", id.case));
            }
        }
        let _ = writeln!(
            out,
            "\npass = the SDK parsed the reply and its content checked out; \
             n/s STATUS = not servable losslessly, refused as documented\n\
             (the code is in conformance/matrix.json); n/a = the surface cannot express the case; \
             - = not run\n"
        );
        for miss in &self.unexpected {
            let detail = miss.detail.as_deref().map(|detail| {
                let short: String = detail.chars().take(DETAIL_CHARS).collect();
                let cut = if short.len() < detail.len() {
                    "..."
                } else {
                    ""
                };
                format!(": {short}{cut}")
            });
            let _ = writeln!(
                out,
                "UNEXPECTED {} {}: expected `{}`, got `{}`{}",
                miss.client.name(),
                miss.cell.label(),
                miss.expected,
                miss.observed,
                detail.unwrap_or_default()
            );
        }
        out
    }
}

/// The pinned SDK versions, for the matrix heading.
fn pins(client: Client) -> String {
    let root = workspace_root();
    match client {
        Client::Python => {
            let text = read_or_empty(&root.join(PYTHON_REQUIREMENTS));
            let pinned: Vec<String> = text
                .lines()
                .filter(|line| line.starts_with("openai==") || line.starts_with("anthropic=="))
                .map(|line| line.replace("==", " "))
                .collect();
            pinned.join(", ")
        }
        Client::Node => {
            let package: Value = serde_json::from_str(&read_or_empty(&root.join(NODE_PACKAGE)))
                .unwrap_or(Value::Null);
            let pinned: Vec<String> = package["dependencies"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(name, version)| format!("{name} {}", version.as_str().unwrap_or("?")))
                .collect();
            pinned.join(", ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|arg| (*arg).to_owned()).collect()
    }

    #[test]
    fn options_parse_in_both_spellings() {
        let options = parse(&args(&[
            "--against=https://router.test",
            "--key",
            "k",
            "--catalog-models",
            "chat=a,messages=b",
            "--client",
            "node",
        ]))
        .unwrap();
        assert_eq!(options.against.as_deref(), Some("https://router.test"));
        assert_eq!(options.key.as_deref(), Some("k"));
        assert_eq!(options.models.as_deref(), Some("chat=a,messages=b"));
        assert_eq!(options.clients, [Client::Node]);
        assert_eq!(parse(&[]).unwrap().clients, Client::ALL);
    }

    #[test]
    fn bad_options_are_refused() {
        for bad in [
            &["--catalog-models", "chat=a"][..],
            &["--client", "ruby"],
            &["--against"],
            &["--frobnicate"],
        ] {
            assert!(parse(&args(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_committed_matrix_is_complete() {
        let matrix = Matrix::load(&workspace_root().join(MATRIX)).unwrap();
        let grid = matrix
            .expected
            .keys()
            .filter(|cell| cell.inbound != IMAGES)
            .count();
        let images: Vec<&CellId> = matrix
            .expected
            .keys()
            .filter(|cell| cell.inbound == IMAGES)
            .collect();
        let grid_cases = matrix.cases.len() - images.len() / 2;
        let cells = matrix.inbound.len() * grid_cases * matrix.routes.len() * 2;
        assert_eq!(grid, cells);
        assert!(matrix.expected.values().any(|outcome| outcome == "pass"));
        // Image generation: every images case, JSON and stream, covered by
        // Python; the stream form is always refused (no partial images).
        assert!(!images.is_empty());
        for cell in images {
            assert_eq!(cell.route, IMAGES);
            assert!(
                matrix.coverage["python"].contains(&cell.case),
                "{}",
                cell.label()
            );
            if cell.stream {
                assert!(
                    refusal(&matrix.expected[cell]).is_some(),
                    "{}",
                    cell.label()
                );
            }
        }
    }

    #[test]
    fn the_committed_catalog_has_the_placeholder_and_every_route() {
        let catalog = fs::read_to_string(workspace_root().join(CATALOG)).unwrap();
        assert!(catalog.contains(MOCK_URL_PLACEHOLDER));
        let matrix: Value =
            serde_json::from_str(&fs::read_to_string(workspace_root().join(MATRIX)).unwrap())
                .unwrap();
        let images = &matrix["images"];
        for key in ["model", "upstream_model"] {
            let name = images[key].as_str().unwrap();
            assert!(catalog.contains(&format!("\"{name}\"")), "{name}");
        }
        for (_, route) in matrix["routes"].as_object().unwrap() {
            for key in ["model", "upstream_model"] {
                let name = route[key].as_str().unwrap();
                assert!(catalog.contains(&format!("\"{name}\"")), "{name}");
            }
        }
    }

    fn small_matrix(expected_stop: Value) -> Matrix {
        Matrix::from_json(&json!({
            "inbound": ["chat"],
            "routes": {"chat": {}, "responses": {}},
            "cases": {"text": "", "stop": ""},
            "clients": {"python": ["text", "stop"], "node": ["text"]},
            "refusals": {"stop": {"chat": {"param": "stop", "message": "No stop here."}}},
            "expected": {"chat": {
                "text": {"chat": "pass", "responses": "pass"},
                "stop": {"chat": "pass", "responses": expected_stop}
            }}
        }))
        .unwrap()
    }

    #[test]
    fn a_cell_may_differ_between_json_and_stream() {
        let matrix = small_matrix(json!({"json": "400 invalid_parameter", "stream": "n/a"}));
        let id = |stream| CellId {
            inbound: "chat".into(),
            case: "stop".into(),
            route: "responses".into(),
            stream,
        };
        assert_eq!(matrix.expected[&id(false)], "400 invalid_parameter");
        assert_eq!(matrix.expected[&id(true)], "n/a");
    }

    #[test]
    fn malformed_expectations_are_refused() {
        for bad in [
            json!("ok"),
            json!("400"),
            json!("4xx code"),
            json!({"json": "pass"}),
        ] {
            let value = json!({
                "inbound": ["chat"], "routes": {"chat": {}}, "cases": {"text": ""},
                "clients": {"python": [], "node": []},
                "expected": {"chat": {"text": {"chat": bad}}}
            });
            assert!(Matrix::from_json(&value).is_err(), "{value}");
        }
    }

    #[test]
    fn outcomes_are_compared_with_the_declared_expectation() {
        let matrix = small_matrix(json!("400 invalid_parameter"));
        let cell = |case: &str, route: &str, stream| CellId {
            inbound: "chat".into(),
            case: case.into(),
            route: route.into(),
            stream,
        };
        let seen = |outcome: &str| Observed {
            outcome: outcome.into(),
            detail: Some("why".into()),
            param: Some("stop".into()),
            message: Some("No stop here.".into()),
        };
        let mut python = BTreeMap::new();
        python.insert(cell("text", "chat", false), seen("pass"));
        python.insert(cell("text", "chat", true), seen("fail"));
        python.insert(cell("text", "responses", false), seen("pass"));
        python.insert(cell("text", "responses", true), seen("pass"));
        python.insert(cell("stop", "chat", false), seen("pass"));
        python.insert(cell("stop", "chat", true), seen("pass"));
        python.insert(
            cell("stop", "responses", false),
            seen("400 invalid_parameter"),
        );
        // Served although the table says it cannot be: unexpected too.
        python.insert(cell("stop", "responses", true), seen("pass"));
        let node = BTreeMap::new();
        let report = Report::new(
            &matrix,
            &[(Client::Python, python), (Client::Node, node)],
            false,
        );
        let labels: Vec<(&str, String)> = report
            .unexpected
            .iter()
            .map(|miss| (miss.client.name(), miss.cell.label()))
            .collect();
        assert_eq!(
            labels,
            [
                ("python", "chat/stop/responses/stream".to_owned()),
                ("python", "chat/text/chat/stream".to_owned()),
                ("node", "chat/text/chat/json".to_owned()),
                ("node", "chat/text/chat/stream".to_owned()),
                ("node", "chat/text/responses/json".to_owned()),
                ("node", "chat/text/responses/stream".to_owned()),
            ]
        );
        assert_eq!(report.expected, 6);
        assert_eq!(
            report.verdicts[&("python", cell("stop", "responses", false))],
            Verdict::Refused(400)
        );
        // Node does not cover `stop`: not run, not a failure.
        assert_eq!(
            report.verdicts[&("node", cell("stop", "chat", false))],
            Verdict::NotRun
        );
        let rendered = report.render(&matrix);
        assert!(rendered.contains("n/s 400"), "{rendered}");
        assert!(rendered.contains("FAIL"), "{rendered}");
    }

    #[test]
    fn a_refusal_must_say_the_declared_param_and_message() {
        let matrix = small_matrix(json!("400 invalid_parameter"));
        let cell = CellId {
            inbound: "chat".into(),
            case: "stop".into(),
            route: "responses".into(),
            stream: false,
        };
        let refused = |param: Option<&str>, message: &str| Observed {
            outcome: "400 invalid_parameter".into(),
            detail: None,
            param: param.map(str::to_owned),
            message: Some(message.to_owned()),
        };
        assert_eq!(
            matrix.refusal_mismatch(&cell, &refused(Some("stop"), "No stop here.")),
            None
        );
        let wrong_param = matrix
            .refusal_mismatch(&cell, &refused(Some("stream"), "No stop here."))
            .unwrap();
        assert!(wrong_param.contains("`stream`"), "{wrong_param}");
        assert!(
            matrix
                .refusal_mismatch(&cell, &refused(None, "No stop here."))
                .is_some()
        );
        assert!(
            matrix
                .refusal_mismatch(&cell, &refused(Some("stop"), "Something else."))
                .is_some()
        );

        let contains =
            RefusalSpec::from_json(&json!({"message_contains": "use 2023-06-01"})).unwrap();
        assert_eq!(
            contains.mismatch(None, Some("`2026-10-21`: use 2023-06-01")),
            None
        );
        assert!(contains.mismatch(None, Some("nope")).is_some());
    }

    #[test]
    fn every_refusal_declares_its_param_and_message() {
        let base = |refusals: Value| {
            json!({
                "inbound": ["chat", "messages"], "routes": {"chat": {}}, "cases": {"stop": ""},
                "clients": {"python": [], "node": []},
                "refusals": refusals,
                "expected": {
                    "chat": {"stop": {"chat": "400 invalid_parameter"}},
                    "messages": {"stop": {"chat": "400 invalid_request_error"}}
                }
            })
        };
        let full = json!({"stop": {
            "chat": {"param": "stop", "message": "m"},
            "messages": {"message_contains": "m"}
        }});
        assert!(Matrix::from_json(&base(full)).is_ok());
        for bad in [
            // No entry for the Messages refusal.
            json!({"stop": {"chat": {"param": "stop", "message": "m"}}}),
            // An OpenAI surface's refusal without its param.
            json!({"stop": {"chat": {"message": "m"}, "messages": {"message": "m"}}}),
            // A param on the Messages surface, whose errors have none.
            json!({"stop": {
                "chat": {"param": "stop", "message": "m"},
                "messages": {"param": "stop", "message": "m"}
            }}),
            // Both message forms, or neither.
            json!({"stop": {
                "chat": {"param": "stop", "message": "m", "message_contains": "m"},
                "messages": {"message": "m"}
            }}),
            json!({"stop": {"chat": {"param": "stop"}, "messages": {"message": "m"}}}),
        ] {
            assert!(Matrix::from_json(&base(bad.clone())).is_err(), "{bad}");
        }
    }
}
