//! `cargo xtask db`: find a PostgreSQL server to use, or start and stop a private cluster.
//!
//! Order: a reachable `DATABASE_URL`; a server on 127.0.0.1:5432 that lets `postgres` in
//! without a password; else a private cluster under `target/pg` (or `/tmp/router-pg-<hash>`
//! when the `postgres` user cannot reach the workspace), on port 55432 or the next free one.
//! Progress goes to stderr; stdout carries only the `DATABASE_URL=...` line.

use std::fs::{self, File};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::{display, run_checked, target_dir, workspace_root};

/// Where Debian's PostgreSQL 15 puts its tools; `PATH` is the fallback.
const PG_BIN: &str = "/usr/lib/postgresql/15/bin";
/// The system user PostgreSQL runs as; the server refuses to run as root.
const PG_USER: &str = "postgres";
const SYSTEM_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";
const FIRST_PORT: u16 = 55432;
const PORTS_TO_TRY: u16 = 100;
/// Longest Unix socket path (`sun_path` is 108 bytes with the terminating NUL).
const MAX_SOCKET_PATH: usize = 107;

/// Server settings for the private cluster. It holds test and demo data only, which may be
/// lost in a crash, so durability is traded for speed (`fsync`, `synchronous_commit` and
/// `full_page_writes` off). Tests clone databases and run in parallel, hence the connections.
const SERVER_SETTINGS: &[&str] = &[
    "listen_addresses=127.0.0.1",
    "fsync=off",
    "synchronous_commit=off",
    "full_page_writes=off",
    "max_connections=400",
    "shared_buffers=128MB",
];

/// Whether PostgreSQL's library directory holds the contrib library `name`.
fn library_installed(name: &str) -> bool {
    let pg_config = Path::new(PG_BIN).join("pg_config");
    let pg_config = if pg_config.exists() {
        pg_config
    } else {
        PathBuf::from("pg_config")
    };
    Command::new(pg_config)
        .arg("--pkglibdir")
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|out| out.status.success())
        .is_some_and(|out| {
            let dir = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            Path::new(&dir).join(format!("{name}.so")).is_file()
        })
}

pub fn run(args: &[String]) -> Result<()> {
    match args {
        [] => start(),
        [command] if command == "start" => start(),
        [command] if command == "stop" => stop(),
        _ => bail!("unexpected arguments {args:?}; try `cargo xtask db` or `cargo xtask db stop`"),
    }
}

fn start() -> Result<()> {
    let url = ensure_postgres()?;
    println!("DATABASE_URL={url}");
    Ok(())
}

/// Finds a usable PostgreSQL server, starting the private cluster if need be, and returns
/// its URL.
pub fn ensure_postgres() -> Result<String> {
    if let Some(url) = url_from_env() {
        return Ok(url);
    }
    if system_server_usable() {
        eprintln!("xtask db: using the server on 127.0.0.1:5432");
        return Ok(SYSTEM_URL.to_owned());
    }
    Cluster::prepare()?.ensure_running()
}

/// Runs one statement with `psql` against `database_url`; returns its unaligned output.
pub(crate) fn psql(database_url: &str, sql: &str) -> Result<String> {
    let output = Command::new("psql")
        .arg(database_url)
        .args(["-AtXq", "-c", sql])
        .stdin(Stdio::null())
        .output()
        .context("could not run psql")?;
    anyhow::ensure!(
        output.status.success(),
        "psql failed: {}",
        String::from_utf8_lossy(&output.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// The per-test databases `router-store`'s test support clones from its template
/// (`router_test_<unix seconds>_<32 hex digits>`); the template itself does not match.
const TEST_DATABASE_PATTERN: &str = "^router_test_[0-9]+_[0-9a-f]{32}$";

/// Drops the per-test databases on the server of `server_url` that nobody is connected
/// to, and returns how many it dropped. They are not free to keep: the autovacuum
/// launcher starts a worker for every database once per `autovacuum_naptime` (a minute),
/// so a few hundred of them fork several backends a second on the server's core.
pub(crate) fn drop_test_databases(server_url: &str) -> Result<usize> {
    drop_databases_matching(server_url, TEST_DATABASE_PATTERN)
}

/// Drops every database whose name matches the regular expression `pattern` (a constant)
/// and that nobody is connected to; returns how many.
fn drop_databases_matching(server_url: &str, pattern: &str) -> Result<usize> {
    let names = psql(
        server_url,
        &format!("SELECT datname FROM pg_database WHERE datname ~ '{pattern}' ORDER BY datname"),
    )?;
    let mut dropped = 0;
    for name in names.lines().filter(|name| !name.is_empty()) {
        // Without FORCE: a database still in use (a test running now) refuses and stays.
        if psql(server_url, &format!("DROP DATABASE IF EXISTS \"{name}\"")).is_ok() {
            dropped += 1;
        }
    }
    Ok(dropped)
}

fn stop() -> Result<()> {
    let mut stopped = false;
    for cluster in Cluster::candidates()? {
        if cluster.initialized() && cluster.is_running()? {
            eprintln!(
                "xtask db: stopping the cluster in {}",
                cluster.dir.display()
            );
            let mut pg_ctl = cluster.pg_tool("pg_ctl");
            pg_ctl
                .arg("-D")
                .arg(cluster.data())
                .args(["-m", "fast", "-w", "stop"]);
            run_checked(&mut pg_ctl)?;
            stopped = true;
        }
    }
    if !stopped {
        eprintln!("xtask db: no private cluster is running");
    }
    Ok(())
}

/// `DATABASE_URL` from the environment, if set and something accepts TCP connections at
/// its host and port.
fn url_from_env() -> Option<String> {
    let url = std::env::var("DATABASE_URL")
        .ok()
        .filter(|url| !url.is_empty())?;
    let Some((host, port)) = host_and_port(&url) else {
        eprintln!("xtask db: DATABASE_URL names no TCP host; ignoring it");
        return None;
    };
    // Never echo the URL itself: it may hold a password.
    if reachable(&host, port) {
        eprintln!("xtask db: using DATABASE_URL from the environment ({host}:{port})");
        Some(url)
    } else {
        eprintln!("xtask db: DATABASE_URL names {host}:{port}, which does not answer; ignoring it");
        None
    }
}

/// Host and port of a `postgres://[user[:password]@]host[:port][/db][?params]` URL; with
/// several hosts, the first.
fn host_and_port(url: &str) -> Option<(String, u16)> {
    let rest = url
        .strip_prefix("postgres://")
        .or_else(|| url.strip_prefix("postgresql://"))?;
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    let hosts = authority
        .rsplit_once('@')
        .map_or(authority, |(_, hosts)| hosts);
    let first = hosts.split(',').next().unwrap_or_default();
    let (host, port) = if let Some(bracketed) = first.strip_prefix('[') {
        let (host, after) = bracketed.split_once(']')?;
        (host, after.strip_prefix(':'))
    } else {
        match first.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (first, None),
        }
    };
    if host.is_empty() {
        return None;
    }
    let port = match port {
        Some(port) => port.parse().ok()?,
        None => 5432,
    };
    Some((host.to_owned(), port))
}

fn reachable(host: &str, port: u16) -> bool {
    let Ok(addrs) = (host, port).to_socket_addrs() else {
        return false;
    };
    addrs
        .into_iter()
        .any(|addr| TcpStream::connect_timeout(&addr, Duration::from_secs(3)).is_ok())
}

/// Whether 127.0.0.1:5432 answers and lets `postgres` in without a password.
fn system_server_usable() -> bool {
    if !reachable("127.0.0.1", 5432) {
        return false;
    }
    let psql = Path::new(PG_BIN).join("psql");
    let psql = if psql.exists() {
        psql
    } else {
        PathBuf::from("psql")
    };
    let output = Command::new(psql)
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            "5432",
            "-U",
            "postgres",
            "-d",
            "postgres",
        ])
        // -w: never prompt for a password; -X: ignore ~/.psqlrc.
        .args(["-w", "-X", "-q", "-t", "-A", "-c", "select 1"])
        .env_remove("PGPASSWORD")
        .env("PGPASSFILE", "/dev/null")
        .env("PGCONNECT_TIMEOUT", "5")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    matches!(output, Ok(output) if output.status.success() && output.stdout.trim_ascii() == b"1")
}

/// The private cluster: `dir` holds `data/`, `log`, `port`, `lock` and the Unix socket.
struct Cluster {
    dir: PathBuf,
    /// Whether the PostgreSQL tools must run as the `postgres` user (we are root).
    as_pg_user: bool,
}

impl Cluster {
    /// The places the cluster may live, preferred first.
    fn candidates() -> Result<Vec<Cluster>> {
        let as_pg_user = running_as_root()?;
        let mut candidates = vec![Cluster {
            dir: target_dir().join("pg"),
            as_pg_user,
        }];
        if as_pg_user {
            candidates.push(Cluster {
                dir: fallback_dir(),
                as_pg_user,
            });
        }
        Ok(candidates)
    }

    /// Picks the cluster's dir and makes sure the user the server runs as owns and reaches it.
    fn prepare() -> Result<Cluster> {
        for cluster in Cluster::candidates()? {
            match cluster.make_dir() {
                Ok(()) => return Ok(cluster),
                Err(error) => eprintln!(
                    "xtask db: cannot keep the cluster in {}: {error:#}",
                    cluster.dir.display()
                ),
            }
        }
        bail!("no usable directory for the PostgreSQL cluster (reasons above)")
    }

    fn make_dir(&self) -> Result<()> {
        fs::create_dir_all(&self.dir)
            .with_context(|| format!("could not create {}", self.dir.display()))?;
        if !self.as_pg_user {
            return Ok(());
        }
        // The `postgres` user must traverse the target dir to reach `pg/`. The target dir is
        // ours to open up; dirs above it are not, which is what the /tmp fallback is for.
        if let Some(parent) = self.dir.parent() {
            let mut permissions = fs::metadata(parent)?.permissions();
            if permissions.mode() & 0o001 == 0 {
                permissions.set_mode(permissions.mode() | 0o001);
                fs::set_permissions(parent, permissions)
                    .with_context(|| format!("could not chmod o+x {}", parent.display()))?;
            }
        }
        let mut chown = Command::new("chown");
        chown.arg(format!("{PG_USER}:")).arg(&self.dir);
        run_checked(chown.stdin(Stdio::null()))?;
        let mut probe = Command::new("runuser");
        probe
            .args(["-u", PG_USER, "--", "test", "-w"])
            .arg(&self.dir)
            .args(["-a", "-x"])
            .arg(&self.dir);
        let usable = probe.stdin(Stdio::null()).status()?.success();
        anyhow::ensure!(usable, "the {PG_USER} user cannot write there");
        Ok(())
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn initialized(&self) -> bool {
        self.data().join("PG_VERSION").exists()
    }

    /// Starts the cluster unless it is already running; returns its URL.
    fn ensure_running(&self) -> Result<String> {
        // Serialises concurrent `cargo xtask db` runs; released when the file is dropped.
        let lock = File::create(self.dir.join("lock"))?;
        lock.lock()?;

        if self.initialized() && self.is_running()? {
            let port = self
                .running_port()
                .context("the cluster runs, but its port is unknown")?;
            if wait_for_port(port, Duration::from_secs(30)) {
                eprintln!(
                    "xtask db: reusing the cluster in {} on port {port}",
                    self.dir.display()
                );
                return Ok(url(port));
            }
            self.print_log_tail();
            bail!(
                "the cluster in {} runs but port {port} does not answer",
                self.dir.display()
            );
        }
        if !self.initialized() {
            self.initdb()?;
        }
        let port = free_port()?;
        fs::write(self.dir.join("port"), format!("{port}\n"))?;
        eprintln!(
            "xtask db: starting the cluster in {} on port {port}",
            self.dir.display()
        );
        if let Err(error) = self.pg_ctl_start(port) {
            self.print_log_tail();
            return Err(error);
        }
        anyhow::ensure!(
            wait_for_port(port, Duration::from_secs(10)),
            "the cluster started but port {port} does not answer"
        );
        Ok(url(port))
    }

    fn initdb(&self) -> Result<()> {
        let data = self.data();
        // A data dir without PG_VERSION is what an interrupted initdb leaves; it holds nothing.
        if data.exists() {
            fs::remove_dir_all(&data)
                .with_context(|| format!("could not remove the partial {}", data.display()))?;
        }
        eprintln!("xtask db: creating a cluster in {}", data.display());
        let mut initdb = self.pg_tool("initdb");
        initdb
            .arg("-D")
            .arg(&data)
            .args([
                "--auth=trust",
                "-U",
                PG_USER,
                "--encoding=UTF8",
                "--locale=C",
            ])
            // A throwaway test cluster: no need to wait for its files to reach the disk.
            .arg("--no-sync");
        run_checked(&mut initdb)
    }

    fn pg_ctl_start(&self, port: u16) -> Result<()> {
        // pg_ctl passes -o through /bin/sh, so paths go in single quotes.
        let socket_dir = self.dir.to_string_lossy().into_owned();
        anyhow::ensure!(
            !socket_dir.contains('\''),
            "the cluster path {socket_dir} contains a single quote"
        );
        let socket_path_len = socket_dir.len() + format!("/.s.PGSQL.{port}").len();
        // A socket path that does not fit would stop the server from starting: go TCP only.
        let socket_dir = if socket_path_len <= MAX_SOCKET_PATH {
            socket_dir
        } else {
            String::new()
        };
        let mut options = format!("-p {port} -k '{socket_dir}'");
        for setting in SERVER_SETTINGS {
            options.push_str(" -c ");
            options.push_str(setting);
        }
        // The bench reads per-statement times (its floors and the slowest statement of a
        // load step) from pg_stat_statements, where the contrib library is installed.
        if library_installed("pg_stat_statements") {
            options.push_str(" -c shared_preload_libraries=pg_stat_statements");
        }
        let mut pg_ctl = self.pg_tool("pg_ctl");
        pg_ctl
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.dir.join("log"))
            .args(["-o", &options, "-w", "-t", "60", "start"]);
        run_checked(&mut pg_ctl)
    }

    fn is_running(&self) -> Result<bool> {
        let mut pg_ctl = self.pg_tool("pg_ctl");
        pg_ctl
            .arg("-D")
            .arg(self.data())
            .arg("status")
            .stdout(Stdio::null());
        let status = pg_ctl
            .status()
            .with_context(|| format!("could not run `{}`", display(&pg_ctl)))?;
        // 0: running; 3: not running; 4: no usable data dir.
        Ok(status.success())
    }

    /// The port of the running server: the fourth line of `postmaster.pid`, else the port
    /// recorded when it was started.
    fn running_port(&self) -> Option<u16> {
        let from_pid_file = fs::read_to_string(self.data().join("postmaster.pid"))
            .ok()
            .and_then(|pid_file| pid_file.lines().nth(3)?.trim().parse().ok());
        from_pid_file.or_else(|| self.recorded_port())
    }

    fn recorded_port(&self) -> Option<u16> {
        fs::read_to_string(self.dir.join("port"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// A PostgreSQL tool, run as the `postgres` user when we are root.
    fn pg_tool(&self, name: &str) -> Command {
        let path = Path::new(PG_BIN).join(name);
        let path = if path.exists() {
            path
        } else {
            PathBuf::from(name)
        };
        let mut command = if self.as_pg_user {
            let mut runuser = Command::new("runuser");
            runuser.args(["-u", PG_USER, "--"]).arg(path);
            runuser
        } else {
            Command::new(path)
        };
        // A dir the tools can enter (not root's cwd); nothing asks questions; stdout stays
        // free for the URL.
        command
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(std::io::stderr());
        command
    }

    fn print_log_tail(&self) {
        let log = self.dir.join("log");
        if let Ok(text) = fs::read_to_string(&log) {
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(30)..];
            eprintln!("xtask db: the end of {}:", log.display());
            for line in tail {
                eprintln!("    {line}");
            }
        }
    }
}

fn url(port: u16) -> String {
    format!("postgres://{PG_USER}@127.0.0.1:{port}/postgres")
}

/// The first free port from 55432 up (our own cluster is not running at this point).
fn free_port() -> Result<u16> {
    for port in FIRST_PORT..FIRST_PORT + PORTS_TO_TRY {
        if port_free(port) {
            return Ok(port);
        }
        eprintln!("xtask db: port {port} is taken");
    }
    bail!(
        "no free port in {FIRST_PORT}..{}",
        FIRST_PORT + PORTS_TO_TRY
    )
}

fn port_free(port: u16) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    TcpListener::bind(addr).is_ok()
        && TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_err()
}

fn wait_for_port(port: u16, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if reachable("127.0.0.1", port) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        sleep(Duration::from_millis(200));
    }
}

fn running_as_root() -> Result<bool> {
    let output = Command::new("id")
        .arg("-u")
        .stdin(Stdio::null())
        .output()
        .context("could not run `id -u`")?;
    anyhow::ensure!(output.status.success(), "`id -u` failed");
    Ok(output.stdout.trim_ascii() == b"0")
}

/// `/tmp/router-pg-<hash of the workspace path>`: stable per clone, distinct between clones.
fn fallback_dir() -> PathBuf {
    // FNV-1a, spelled out because std's hasher may change between Rust releases.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in workspace_root().as_os_str().as_encoded_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    PathBuf::from(format!("/tmp/router-pg-{hash:016x}"))
}

#[cfg(test)]
mod tests {
    use super::{TEST_DATABASE_PATTERN, drop_databases_matching, host_and_port, psql};

    fn server_url() -> String {
        std::env::var("DATABASE_URL")
            .expect("DATABASE_URL is unset: run `cargo xtask test`, or `cargo xtask db` first")
    }

    #[test]
    fn the_pattern_matches_per_test_databases_only() {
        let matches = |name: &str| {
            psql(
                &server_url(),
                &format!("SELECT '{name}' ~ '{TEST_DATABASE_PATTERN}'"),
            )
            .unwrap()
                == "t"
        };
        assert!(matches(
            "router_test_1795611664_3cb02f0d83344a8a8463834343306aa9"
        ));
        assert!(!matches("router_test_template"));
        assert!(!matches("router_bench"));
        assert!(!matches("router_test_1795611664_3cb02f0d"));
    }

    #[test]
    fn only_matching_databases_are_dropped() {
        // A pattern of this test's own: the per-test one would take other tests' databases.
        let tag = format!("xtask_drop_{}", std::process::id());
        let url = server_url();
        for name in ["a_1", "b_1", "keep"] {
            psql(&url, &format!("DROP DATABASE IF EXISTS {tag}_{name}")).unwrap();
            psql(&url, &format!("CREATE DATABASE {tag}_{name}")).unwrap();
        }
        let dropped = drop_databases_matching(&url, &format!("^{tag}_[a-z]_[0-9]$")).unwrap();
        let left = psql(
            &url,
            &format!(
                "SELECT string_agg(datname, ',') FROM pg_database WHERE datname LIKE '{tag}%'"
            ),
        )
        .unwrap();
        psql(&url, &format!("DROP DATABASE IF EXISTS {tag}_keep")).unwrap();
        assert_eq!(dropped, 2);
        assert_eq!(left, format!("{tag}_keep"));
    }

    #[test]
    fn host_and_port_of_urls() {
        let cases = [
            (
                "postgres://u:p@db.example:6543/x?sslmode=disable",
                Some(("db.example", 6543)),
            ),
            ("postgresql://127.0.0.1/x", Some(("127.0.0.1", 5432))),
            ("postgres://u@[::1]:5433/x", Some(("::1", 5433))),
            ("postgres://u:p%40ss@h1:1,h2:2/x", Some(("h1", 1))),
            ("postgres:///x?host=/run/postgresql", None),
            ("mysql://h/x", None),
        ];
        for (url, expected) in cases {
            let expected = expected.map(|(host, port)| (host.to_owned(), port));
            assert_eq!(host_and_port(url), expected, "{url}");
        }
    }
}
