//! No import cycles between the top-level modules of a crate (issue 28): a
//! module that imports a module that imports it back is a knot, and knots
//! grow until nothing can be understood or moved alone.
//!
//! The graph is read from the sources: for each file, the top-level module
//! it belongs to (`src/a.rs`, `src/a/**` are `a`), and the top-level modules
//! its code names through `crate::` (plain or grouped `use crate::{..}`) or,
//! in a top-level module's own file, `super::`. Comments are skipped, so a
//! doc link is no edge. The crate root re-exports and declares modules and
//! is left out. Each binary under `src/bin/NAME/` is a crate of its own.
//!
//! [`KNOTS`] lists the cycles that exist, each with its reason; the test
//! fails when a cycle appears that is not listed, or a listed one changes or
//! is gone (then shorten the list).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Known cycles: (crate source folder, modules in the cycle, why it stays).
const KNOTS: &[(&str, &[&str], &str)] = &[];

/// One crate root's files: top-level module name -> sources.
fn roots(src: &Path) -> Vec<(String, BTreeMap<String, String>)> {
    let mut roots = Vec::new();
    let mut library = BTreeMap::new();
    collect(src, src, &mut library);
    roots.push((src.display().to_string(), library));
    let bin = src.join("bin");
    for entry in std::fs::read_dir(&bin).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            let mut binary = BTreeMap::new();
            collect(&path, &path, &mut binary);
            roots.push((path.display().to_string(), binary));
        }
    }
    roots
}

/// Files under `dir` (relative to `root`) by top-level module; the root
/// file (`lib.rs`, `main.rs`) and `bin/` are skipped.
fn collect(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path: PathBuf = entry.path();
        let relative = path.strip_prefix(root).unwrap_or(&path);
        let mut parts = relative.components();
        let Some(first) = parts.next() else { continue };
        let first = first.as_os_str().to_string_lossy().into_owned();
        if path.is_dir() {
            if dir == root && first == "bin" {
                continue;
            }
            collect(root, &path, out);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let top = first.trim_end_matches(".rs").to_owned();
        if dir == root && (top == "lib" || top == "main") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let code: String = text
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .map(|line| format!("{line}\n"))
            .collect();
        // A top-level module's own file may name its siblings as `super::`.
        let own_file = dir == root;
        let entry = out.entry(top).or_default();
        if own_file {
            entry.push_str(&code.replace("super::", "crate::"));
        } else {
            entry.push_str(&code);
        }
    }
}

/// The top-level modules `code` names through `crate::`.
fn named_modules(code: &str, modules: &BTreeSet<&str>) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let preceded_by_ident = rest[..at]
            .chars()
            .last()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        rest = &rest[at + "crate::".len()..];
        if preceded_by_ident {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            // `crate::{a, b::c, d::{e, f}}`: the first segment of each item.
            let mut depth = 1usize;
            let mut item_start = true;
            let mut ident = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => {
                        item_start = true;
                        continue;
                    }
                    _ => {}
                }
                if item_start && depth == 1 {
                    if c.is_alphanumeric() || c == '_' {
                        ident.push(c);
                        continue;
                    }
                    if !ident.is_empty() {
                        if modules.contains(ident.as_str()) {
                            named.insert(std::mem::take(&mut ident));
                        }
                        ident.clear();
                        item_start = false;
                    }
                }
            }
            if modules.contains(ident.as_str()) {
                named.insert(ident);
            }
            continue;
        }
        let ident: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if modules.contains(ident.as_str()) {
            named.insert(ident);
        }
    }
    named
}

/// Strongly connected components with more than one module (Tarjan).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<BTreeSet<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, node: &'a str) {
            let next = self.index.len();
            self.index.insert(node, next);
            self.low.insert(node, next);
            self.stack.push(node);
            self.on_stack.insert(node);
            for target in self.graph.get(node).into_iter().flatten() {
                let target = target.as_str();
                if !self.index.contains_key(target) {
                    self.visit(target);
                    let low = self.low[node].min(self.low[target]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(target) {
                    let low = self.low[node].min(self.index[target]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = BTreeSet::new();
                while let Some(member) = self.stack.pop() {
                    self.on_stack.remove(member);
                    component.insert(member.to_owned());
                    if member == node {
                        break;
                    }
                }
                if component.len() > 1 {
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !walk.index.contains_key(node.as_str()) {
            walk.visit(node);
        }
    }
    walk.found
}

/// Every cycle of every crate root: (root folder relative to the
/// workspace, modules).
fn workspace_cycles() -> Vec<(String, BTreeSet<String>)> {
    let workspace = crate::workspace_root();
    let mut sources: Vec<PathBuf> = std::fs::read_dir(workspace.join("crates"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    sources.push(workspace.join("xtask").join("src"));
    sources.sort();
    let mut found = Vec::new();
    for src in sources {
        for (root, files) in roots(&src) {
            let modules: BTreeSet<&str> = files.keys().map(String::as_str).collect();
            let graph: BTreeMap<String, BTreeSet<String>> = files
                .iter()
                .map(|(module, code)| {
                    let mut targets = named_modules(code, &modules);
                    targets.remove(module);
                    (module.clone(), targets)
                })
                .collect();
            let root = Path::new(&root)
                .strip_prefix(&workspace)
                .map(|p| p.display().to_string())
                .unwrap_or(root);
            for cycle in cycles(&graph) {
                found.push((root.clone(), cycle));
            }
        }
    }
    found
}

#[test]
fn no_crate_has_an_import_cycle_between_its_modules() {
    let found = workspace_cycles();
    let listed: Vec<(String, BTreeSet<String>)> = KNOTS
        .iter()
        .map(|(root, modules, _why)| {
            (
                (*root).to_owned(),
                modules.iter().map(|m| (*m).to_owned()).collect(),
            )
        })
        .collect();
    let unlisted: Vec<_> = found.iter().filter(|c| !listed.contains(c)).collect();
    let gone: Vec<_> = listed.iter().filter(|c| !found.contains(c)).collect();
    assert!(
        unlisted.is_empty() && gone.is_empty(),
        "module import cycles not in KNOTS: {unlisted:#?}\nKNOTS entries no longer found (shorten the list): {gone:#?}"
    );
}

#[test]
fn grouped_and_plain_paths_name_their_first_module() {
    let modules: BTreeSet<&str> = ["app", "body", "reply", "jobs"].into_iter().collect();
    let code = "use crate::{app::App, body::{self, read}, reply};\nlet x = crate::jobs::run();\nlet y = notcrate::app;";
    let named = named_modules(code, &modules);
    assert_eq!(
        named,
        ["app", "body", "jobs", "reply"]
            .into_iter()
            .map(String::from)
            .collect()
    );
}

#[test]
fn a_cycle_is_found_and_a_chain_is_not() {
    let graph = |edges: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (from, to) in edges {
            g.entry((*from).into()).or_default().insert((*to).into());
            g.entry((*to).into()).or_default();
        }
        g
    };
    assert!(cycles(&graph(&[("a", "b"), ("b", "c")])).is_empty());
    let found = cycles(&graph(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].len(), 3);
}
