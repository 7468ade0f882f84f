//! The deployment artefacts (issue 30, item 7) checked against what they
//! deploy, as far as this machine allows (no container engine, no cluster):
//! the container recipe builds the workspace's real packages with its
//! toolchain; the compose file's router settings, given to the real binary,
//! serve a request through the mock supplier; the Kubernetes probes point
//! at real public routes on declared ports and the migration step is a
//! real command; the systemd unit passes `systemd-analyze verify`.

use crate::harness::*;
use router_server::routes::{AuthRule, ROUTES};
use router_store::test_support::TestDatabase;
use serde_json::{Value, json};
use serde_yaml_ng::Value as Yaml;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn yaml_documents(path: &str) -> Vec<Yaml> {
    let text = read(path);
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|doc| serde::Deserialize::deserialize(doc).unwrap_or_else(|e| panic!("{path}: {e}")))
        .collect()
}

/// The settings `docs/operations.md` documents (its table's first column).
fn documented_settings() -> Vec<String> {
    read("docs/operations.md")
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split_once('`'))
        .map(|(name, _)| name.to_owned())
        .collect()
}

/// Every `(package, binary)` of the workspace.
fn workspace_binaries() -> Vec<(String, String)> {
    let mut binaries = Vec::new();
    for entry in std::fs::read_dir(repo().join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(text) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        let manifest: toml::Table = text.parse().unwrap();
        let package = manifest["package"]["name"].as_str().unwrap().to_owned();
        if let Some(bins) = manifest.get("bin").and_then(|b| b.as_array()) {
            for bin in bins {
                binaries.push((package.clone(), bin["name"].as_str().unwrap().to_owned()));
            }
        } else if dir.join("src/main.rs").exists() {
            binaries.push((package.clone(), package.clone()));
        }
    }
    binaries
}

#[test]
fn the_container_recipe_builds_the_workspace_binaries_with_its_toolchain() {
    let recipe = read("Containerfile");
    let toolchain: toml::Table = read("rust-toolchain.toml").parse().unwrap();
    let channel = toolchain["toolchain"]["channel"].as_str().unwrap();
    assert!(
        recipe.contains(&format!("ARG RUST_VERSION={channel}\n")),
        "the image's Rust is not rust-toolchain.toml's {channel}"
    );
    // The build command: joined continuation lines, then its -p/--bin pairs.
    let joined = recipe.replace("\\\n", " ");
    let build = joined
        .lines()
        .find(|line| line.contains("cargo build"))
        .expect("a cargo build step");
    assert!(
        build.contains("--release") && build.contains("--locked"),
        "{build}"
    );
    let command = &build[build.find("cargo build").unwrap()..];
    let command = command.split("&&").next().unwrap();
    let words: Vec<&str> = command.split_whitespace().collect();
    let mut built = Vec::new();
    for (i, word) in words.iter().enumerate() {
        if *word == "-p" {
            assert_eq!(words[i + 2], "--bin", "{build}");
            built.push((words[i + 1].to_owned(), words[i + 3].to_owned()));
        }
    }
    let binaries = workspace_binaries();
    assert!(built.contains(&("router".to_owned(), "router".to_owned())));
    for pair in &built {
        assert!(
            binaries.contains(pair),
            "{pair:?} is no workspace binary: {binaries:?}"
        );
        // Copied out of the build stage, and into a runtime stage.
        assert!(
            build.contains(&format!("target/release/{}", pair.1)),
            "{pair:?} is not copied out"
        );
        assert!(
            recipe.contains(&format!("COPY --from=build /out/{} ", pair.1)),
            "{pair:?} reaches no image"
        );
    }
    // Every file copied from the context exists; the targets compose names exist.
    for line in recipe
        .lines()
        .filter(|l| l.starts_with("COPY ") && !l.contains("--from"))
    {
        let source = line.split_whitespace().nth(1).unwrap();
        assert!(repo().join(source).exists(), "{line}");
    }
    for target in ["router", "mock-supplier"] {
        assert!(
            recipe.contains(&format!(" AS {target}\n")),
            "no stage {target}"
        );
    }
    let ignored = read(".dockerignore");
    assert!(
        ignored.lines().any(|l| l.trim() == "target/"),
        "the build context would carry target/"
    );
}

/// The router service of `deploy/compose.yaml`.
fn compose() -> (Yaml, BTreeMap<String, String>) {
    let docs = yaml_documents("deploy/compose.yaml");
    let compose = docs.into_iter().next().unwrap();
    let env: BTreeMap<String, String> = compose["services"]["router"]["environment"]
        .as_mapping()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().unwrap().to_owned(),
                v.as_str().unwrap().to_owned(),
            )
        })
        .collect();
    (compose, env)
}

#[test]
fn the_compose_file_wires_postgres_the_router_and_the_mock() {
    let (compose, env) = compose();
    let services = compose["services"].as_mapping().unwrap();
    for name in ["postgres", "router", "mock-supplier"] {
        assert!(services.contains_key(name), "no service {name}");
    }
    let documented = documented_settings();
    for name in env
        .keys()
        .filter(|k| k.starts_with("ROUTER_") || *k == "DATABASE_URL")
    {
        assert!(
            documented.contains(name),
            "{name} is not a documented setting"
        );
    }
    // The database is the postgres service, with its user and database.
    let postgres = &compose["services"]["postgres"]["environment"];
    let url = url::Url::parse(&env["DATABASE_URL"]).unwrap();
    assert_eq!(url.host_str(), Some("postgres"));
    assert_eq!(url.username(), postgres["POSTGRES_USER"].as_str().unwrap());
    assert_eq!(url.password(), postgres["POSTGRES_PASSWORD"].as_str());
    assert_eq!(
        url.path(),
        format!("/{}", postgres["POSTGRES_DB"].as_str().unwrap())
    );
    // The published ports are the listeners'.
    let ports: Vec<&str> = compose["services"]["router"]["ports"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    for listen in ["ROUTER_LISTEN", "ROUTER_ADMIN_LISTEN"] {
        let port = env[listen].rsplit_once(':').unwrap().1;
        assert!(
            ports
                .iter()
                .any(|p| p.starts_with("127.0.0.1:") && p.ends_with(&format!(":{port}"))),
            "{listen} is not published on the host's loopback: {ports:?}"
        );
    }
    // The catalog's supplier (in the router's network namespace) is the mock.
    let mock = &compose["services"]["mock-supplier"];
    assert_eq!(mock["network_mode"].as_str(), Some("service:router"));
    let listen = mock["command"][1].as_str().unwrap();
    let catalog = read("fixtures/demo-catalog.toml");
    assert!(catalog.contains(&format!("base_url = \"http://{listen}/v1\"")));
    let key_env = "MOCK_SUPPLIER_API_KEY";
    assert!(catalog.contains(key_env) && env.contains_key(key_env));
    for service in ["router", "mock-supplier"] {
        assert_eq!(
            compose["services"][service]["build"]["dockerfile"].as_str(),
            Some("Containerfile")
        );
    }
    // The drain gets its time.
    let grace = compose["services"]["router"]["stop_grace_period"]
        .as_str()
        .unwrap();
    assert!(grace.trim_end_matches('s').parse::<u64>().unwrap() >= 180);
}

/// The compose file's router settings, as the real binary reads them (the
/// hosts made loopback, the database and catalog this test's): the admin
/// API answers on the admin listener only and a request is answered on the
/// public one.
#[tokio::test(flavor = "multi_thread")]
async fn the_compose_settings_serve_a_request() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (_, env) = compose();
    let mock = mock_answering("from the compose setup").await;
    let db = TestDatabase::new().await;
    let dir = std::env::temp_dir().join(format!("router-compose-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let catalog = dir.join("catalog.toml");
    std::fs::write(
        &catalog,
        read("fixtures/demo-catalog.toml").replace("http://127.0.0.1:9100/v1", &mock.base_url()),
    )
    .unwrap();
    let free_port = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    };
    let (public, admin) = (free_port(), free_port());
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_router"));
    command
        .arg("serve")
        .env_remove("ROUTER_LOG")
        .kill_on_drop(true)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    for (name, value) in &env {
        let value = match name.as_str() {
            "DATABASE_URL" => db.url().to_owned(),
            "ROUTER_LISTEN" => value.replace("0.0.0.0:8080", &format!("127.0.0.1:{public}")),
            "ROUTER_ADMIN_LISTEN" => value.replace("0.0.0.0:9090", &format!("127.0.0.1:{admin}")),
            "ROUTER_CATALOG" => catalog.to_str().unwrap().to_owned(),
            "ROUTER_ADMIN_TOKEN" => ADMIN_TOKEN.to_owned(),
            "ROUTER_PUBLIC_BASE_URL" => format!("http://127.0.0.1:{public}"),
            _ => value.clone(),
        };
        command.env(name, value);
    }
    let _child = command.spawn().unwrap();
    let client = reqwest::Client::new();
    let public = format!("http://127.0.0.1:{public}");
    let admin = format!("http://127.0.0.1:{admin}");
    let start = std::time::Instant::now();
    loop {
        if let Ok(resp) = client.get(format!("{public}/readyz")).send().await
            && resp.status() == 200
        {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "never ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let post =
        |url: String, body: Value| client.post(url).bearer_auth(ADMIN_TOKEN).json(&body).send();
    assert_eq!(
        post(
            format!("{public}/admin/accounts"),
            json!({"email": "c@example.com"})
        )
        .await
        .unwrap()
        .status(),
        404
    );
    let key = funded_key_over_http(&client, &admin, "c@example.com", 1_000_000_000).await;
    let resp = client
        .post(format!("{public}/v1/chat/completions"))
        .bearer_auth(&key)
        .json(&hello("demo-chat"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "from the compose setup"
    );
    // The supplier got the demo catalog's key variable from the environment.
    let calls = mock.calls();
    assert_eq!(
        calls[0].header("authorization"),
        Some(format!("Bearer {}", env["MOCK_SUPPLIER_API_KEY"]).as_str())
    );
    mock.shutdown();
}

/// `(name, containerPort)` of a container's ports.
fn container_ports(container: &Yaml) -> Vec<(String, u64)> {
    container["ports"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_owned(),
                p["containerPort"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn env_of(container: &Yaml) -> BTreeMap<String, String> {
    container["env"]
        .as_sequence()
        .map(|env| {
            env.iter()
                .filter_map(|e| {
                    Some((
                        e["name"].as_str()?.to_owned(),
                        e["value"].as_str()?.to_owned(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_kubernetes_probes_and_migration_step_are_real() {
    let docs = yaml_documents("deploy/kubernetes/router.yaml");
    let kind = |k: &str| -> Vec<&Yaml> { docs.iter().filter(|d| d["kind"] == k).collect() };
    let deployment = kind("Deployment")[0];
    let pod = &deployment["spec"]["template"]["spec"];
    let container = &pod["containers"][0];
    let ports = container_ports(container);
    let port_named = |name: &str| ports.iter().find(|(n, _)| n == name).map(|(_, p)| *p);
    // Probes: GET paths that are public rows of the route table, on declared ports.
    let public_get = |path: &str| {
        ROUTES
            .iter()
            .any(|r| r.path == path && r.method == http::Method::GET && r.auth == AuthRule::Public)
    };
    for (probe, path) in [
        ("livenessProbe", "/healthz"),
        ("readinessProbe", "/readyz"),
        ("startupProbe", "/healthz"),
    ] {
        let get = &container[probe]["httpGet"];
        assert_eq!(get["path"].as_str(), Some(path), "{probe}");
        assert!(
            public_get(path),
            "{probe}: {path} is not a public GET route"
        );
        let port = get["port"].as_str().unwrap();
        assert!(
            port_named(port).is_some(),
            "{probe} names no declared port {port}"
        );
    }
    // The listeners are the declared ports; the settings are real.
    let env = env_of(container);
    let port_of = |name: &str| {
        env[name]
            .rsplit_once(':')
            .unwrap()
            .1
            .parse::<u64>()
            .unwrap()
    };
    assert_eq!(Some(port_of("ROUTER_LISTEN")), port_named("http"));
    assert_eq!(Some(port_of("ROUTER_ADMIN_LISTEN")), port_named("admin"));
    let documented = documented_settings();
    for name in env.keys() {
        assert!(
            documented.contains(name),
            "{name} is not a documented setting"
        );
    }
    // The drain and the routing deadline fit in the grace period.
    assert!(pod["terminationGracePeriodSeconds"].as_u64().unwrap() > 180);
    // Services point at declared ports; the admin one is internal.
    for service in kind("Service") {
        for port in service["spec"]["ports"].as_sequence().unwrap() {
            let target = port["targetPort"].as_str().unwrap();
            assert!(port_named(target).is_some(), "a service targets {target}");
        }
    }
    let admin = kind("Service")
        .into_iter()
        .find(|s| s["metadata"]["name"] == "router-admin")
        .unwrap();
    assert_eq!(admin["spec"]["type"].as_str(), Some("ClusterIP"));
    // The migration step runs a real subcommand of the same image.
    let job = kind("Job")[0];
    let migrate = &job["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(migrate["image"], container["image"]);
    let args: Vec<&str> = migrate["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args, ["migrate"]);
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_router"))
        .args(&args)
        .arg("--help")
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "`router migrate --help` fails");
    assert_eq!(container["args"][0].as_str(), Some("serve"));
    // kustomize (kubectl's, offline) renders the directory when present.
    if let Ok(out) = std::process::Command::new("kubectl")
        .args(["kustomize"])
        .arg(repo().join("deploy/kubernetes"))
        .output()
    {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let rendered = String::from_utf8_lossy(&out.stdout);
        assert!(rendered.contains("kind: Deployment") && rendered.contains("kind: Job"));
    } else {
        eprintln!("kubectl is not installed: kustomize not run");
    }
}

#[test]
fn the_systemd_unit_migrates_serves_drains_and_verifies() {
    let unit = read("deploy/systemd/router.service");
    let directive = |name: &str| {
        unit.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no {name}"))
            .to_owned()
    };
    assert_eq!(directive("ExecStartPre"), "/usr/local/bin/router migrate");
    assert_eq!(directive("ExecStart"), "/usr/local/bin/router serve");
    assert_eq!(directive("KillSignal"), "SIGTERM");
    assert!(directive("TimeoutStopSec").parse::<u64>().unwrap() > 180);
    assert!(directive("ExecReload").contains("-HUP"));
    // systemd's own check, with the binary this build made.
    let dir = std::env::temp_dir().join(format!("router-unit-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("router.service");
    std::fs::write(
        &path,
        unit.replace("/usr/local/bin/router", env!("CARGO_BIN_EXE_router")),
    )
    .unwrap();
    match std::process::Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
    {
        Ok(out) => assert!(
            out.status.success(),
            "systemd-analyze verify: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(_) => eprintln!("systemd-analyze is not installed: the unit was not verified"),
    }
}
