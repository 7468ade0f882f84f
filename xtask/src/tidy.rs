//! Tidy checks of the tree itself: the dependency direction of DESIGN.md,
//! and no dead dependencies.
//!
//! Wire crates and `router-canonical` know nothing of async runtimes, HTTP
//! or SQL, nor of each other (a translation is a client codec of one and a
//! supplier codec of another, joined in `router-canonical`); `router-core`
//! knows no SQL and no HTTP server. Checked against the resolved graph from
//! `cargo metadata`, so a transitive slip fails too. Every normal
//! dependency a workspace crate declares must be named in its sources
//! (what `cargo machete` checks, without installing it). No crate's
//! top-level modules import each other in a cycle (`module_cycles`).

#[cfg(test)]
mod module_cycles;

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet};
    use std::process::Command;

    fn metadata() -> serde_json::Value {
        let output = Command::new(env!("CARGO"))
            .args(["metadata", "--format-version", "1"])
            .current_dir(crate::workspace_root())
            .output()
            .expect("cargo metadata runs");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).expect("metadata is JSON")
    }

    /// Package name -> names of its normal (non-dev, non-build) dependencies, transitively.
    fn normal_closure() -> HashMap<String, HashSet<String>> {
        let meta = metadata();
        let names: HashMap<&str, &str> = meta["packages"]
            .as_array()
            .expect("packages")
            .iter()
            .map(|p| {
                (
                    p["id"].as_str().unwrap_or(""),
                    p["name"].as_str().unwrap_or(""),
                )
            })
            .collect();
        let mut direct: HashMap<&str, Vec<&str>> = HashMap::new();
        for node in meta["resolve"]["nodes"].as_array().expect("resolve nodes") {
            let id = node["id"].as_str().unwrap_or("");
            let deps = node["deps"].as_array().expect("deps");
            let normal = deps
                .iter()
                .filter(|d| {
                    d["dep_kinds"]
                        .as_array()
                        .is_some_and(|k| k.iter().any(|k| k["kind"].is_null()))
                })
                .map(|d| d["pkg"].as_str().unwrap_or(""))
                .collect();
            direct.insert(id, normal);
        }
        let mut closure = HashMap::new();
        for (&id, &name) in &names {
            let mut seen = HashSet::new();
            let mut stack = vec![id];
            while let Some(next) = stack.pop() {
                for &dep in direct.get(next).map(Vec::as_slice).unwrap_or(&[]) {
                    if seen.insert(dep) {
                        stack.push(dep);
                    }
                }
            }
            closure.insert(
                name.to_owned(),
                seen.iter().map(|id| names[id].to_owned()).collect(),
            );
        }
        closure
    }

    fn assert_free_of(closure: &HashMap<String, HashSet<String>>, krate: &str, banned: &[&str]) {
        let deps = closure
            .get(krate)
            .unwrap_or_else(|| panic!("{krate} is in the workspace"));
        for b in banned {
            assert!(
                !deps.contains(*b),
                "{krate} must not depend on {b} (see docs/architecture.md)"
            );
        }
    }

    #[test]
    fn dependency_direction_holds() {
        let closure = normal_closure();
        let io = [
            "tokio",
            "hyper",
            "reqwest",
            "diesel",
            "diesel-async",
            "http",
        ];
        let wire_crates = [
            "router-canonical",
            "router-chat",
            "router-messages",
            "router-responses",
            "router-completions",
            "router-gemini",
            "router-converse",
            "router-images",
            "router-videos",
            "router-tokens",
        ];
        for wire in wire_crates {
            assert_free_of(&closure, wire, &io);
            assert!(
                !closure[wire].contains("router-core"),
                "{wire} depends on router-core"
            );
        }
        assert_free_of(
            &closure,
            "router-core",
            &[
                "hyper",
                "reqwest",
                "diesel",
                "diesel-async",
                "router-store",
                "router-supply",
                "router-server",
            ],
        );
        // The manual and its index know nothing of HTTP either (`docs.rs` serves them).
        assert_free_of(&closure, "router-docs", &io);
        assert_free_of(
            &closure,
            "router-store",
            &["hyper", "reqwest", "router-server"],
        );
        assert_free_of(
            &closure,
            "router-supply",
            &["diesel", "router-store", "router-server"],
        );
        // A product wing is reached through the server, never the reverse.
        for wing in [
            "router-uploads",
            "router-notify",
            "router-catalog",
            "router-operator",
            "router-dashboard",
        ] {
            assert_free_of(&closure, wing, &["router-server"]);
        }
        // The document builder knows descriptions, not serving or the gateway.
        assert_free_of(
            &closure,
            "router-openapi",
            &["hyper", "router-core", "router-store", "router-server"],
        );
        // The HTTP edge knows nothing of the process around it (settings,
        // start-up, the job registry).
        assert_free_of(&closure, "router-server", &["router", "clap"]);
        // The mechanics under the edge know no route, credential, envelope
        // or gateway: no router crate at all.
        let router_crates: Vec<&str> = closure
            .keys()
            .map(String::as_str)
            .filter(|name| name.starts_with("router"))
            .collect();
        assert!(router_crates.contains(&"router-core"), "{router_crates:?}");
        assert_free_of(&closure, "router-http", &router_crates);
        // The access line and the metrics are fed by the edge; they serve
        // nothing (the OTLP exporter's HTTP client is their only HTTP).
        assert_free_of(
            &closure,
            "router-telemetry",
            &["router-http", "router-server"],
        );
    }

    #[test]
    fn wire_crates_are_independent_of_each_other() {
        let closure = normal_closure();
        let wire = [
            "router-chat",
            "router-messages",
            "router-responses",
            "router-completions",
            "router-gemini",
            "router-converse",
            "router-images",
            "router-videos",
        ];
        for a in wire {
            for b in wire.iter().filter(|b| **b != a) {
                assert!(
                    !closure[a].contains(*b),
                    "{a} depends on {b}: wire crates meet only in router-canonical"
                );
            }
        }
    }

    /// Dependencies named in no source file because they are linked for
    /// their side effects or features only.
    const USED_WITHOUT_A_PATH: &[(&str, &str)] = &[
        // object_store's S3 client needs reqwest built with TLS.
        ("router-uploads", "reqwest"),
    ];

    #[test]
    fn every_declared_dependency_is_used() {
        let meta = metadata();
        let members: HashSet<&str> = meta["workspace_members"]
            .as_array()
            .expect("members")
            .iter()
            .filter_map(|m| m.as_str())
            .collect();
        let mut unused = Vec::new();
        for package in meta["packages"].as_array().expect("packages") {
            if !members.contains(package["id"].as_str().unwrap_or("")) {
                continue;
            }
            let name = package["name"].as_str().unwrap_or("");
            let manifest = std::path::Path::new(package["manifest_path"].as_str().unwrap_or(""));
            let dir = manifest.parent().expect("a manifest has a folder");
            let mut sources = String::new();
            for sub in ["src", "build.rs"] {
                collect_rust(&dir.join(sub), &mut sources);
            }
            for dep in package["dependencies"].as_array().expect("dependencies") {
                if !dep["kind"].is_null() {
                    continue;
                }
                let dep_name = dep["rename"]
                    .as_str()
                    .or_else(|| dep["name"].as_str())
                    .unwrap_or("");
                if USED_WITHOUT_A_PATH.contains(&(name, dep_name)) {
                    continue;
                }
                let ident = dep_name.replace('-', "_");
                let used = [
                    format!("{ident}::"),
                    format!("use {ident}"),
                    format!("{ident}!"),
                ]
                .iter()
                .any(|needle| sources.contains(needle.as_str()));
                if !used {
                    unused.push(format!("{name} -> {dep_name}"));
                }
            }
        }
        assert!(unused.is_empty(), "declared but never used: {unused:?}");
    }

    fn collect_rust(path: &std::path::Path, out: &mut String) {
        if path.is_file() {
            if path.extension().is_some_and(|e| e == "rs") {
                out.push_str(&std::fs::read_to_string(path).unwrap_or_default());
            }
            return;
        }
        for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
            collect_rust(&entry.path(), out);
        }
    }
}
