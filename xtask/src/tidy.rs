//! Tidy checks of the tree itself: the dependency direction of DESIGN.md.
//!
//! Wire crates and `router-canonical` know nothing of async runtimes, HTTP
//! or SQL; `router-core` knows no SQL and no HTTP server. Checked against
//! the resolved graph from `cargo metadata`, so a transitive slip fails too.

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet};
    use std::process::Command;

    /// Package name -> names of its normal (non-dev, non-build) dependencies, transitively.
    fn normal_closure() -> HashMap<String, HashSet<String>> {
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
        let meta: serde_json::Value =
            serde_json::from_slice(&output.stdout).expect("metadata is JSON");
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
    }
}
