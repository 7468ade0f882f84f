//! Fingerprints the embedded migrations, so test support can tell when its
//! migrated template database is stale, and rebuilds the crate when they change
//! (`embed_migrations!` alone does not tell cargo to watch the directory).

use std::fs;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=migrations");
    let mut files = Vec::new();
    collect(Path::new("migrations"), &mut files);
    files.sort();
    // FNV-1a, 64 bits: a change detector, not a security boundary.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for (path, contents) in &files {
        for byte in path
            .bytes()
            .chain([0])
            .chain(contents.iter().copied())
            .chain([0])
        {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    println!("cargo:rustc-env=ROUTER_STORE_MIGRATIONS_FINGERPRINT={hash:016x}");
}

fn collect(dir: &Path, files: &mut Vec<(String, Vec<u8>)>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        println!("cargo:rerun-if-changed={}", path.display());
        if path.is_dir() {
            collect(&path, files);
        } else if let Ok(contents) = fs::read(&path) {
            files.push((path.display().to_string(), contents));
        }
    }
}
