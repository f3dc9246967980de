//! Every Rust block of the README, built and run as a crate of its own, the
//! way a user pastes it: the block is `src/main.rs`, and the `[dependencies]`
//! lines of the nearest TOML block above it are the crate's `Cargo.toml`
//! (flakeid itself taken from this checkout: a version requirement becomes a
//! path; a `git` source cannot, so the README gives its git line in a TOML
//! block before the published form, which is the one read here). A block
//! may not lean on what a doc test adds: no hidden `# ` lines, no
//! `#[cfg(feature = ...)]` that would make it an empty program in the
//! user's crate, and a `fn main`.
//!
//! The crate docs' `include_str!("../README.md")` runs the same blocks as
//! doc tests; this test is what keeps them pasteable.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A Rust block of the README, with the dependency lines it says it needs.
struct Snippet {
    line: usize,
    code: String,
    dependencies: Vec<String>,
}

/// The README's Rust blocks, each with the `[dependencies]` lines of the
/// closest TOML block before it.
fn snippets(readme: &str) -> Vec<Snippet> {
    let mut found = Vec::new();
    let mut dependencies: Vec<String> = Vec::new();
    let mut lines = readme.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        let Some(lang) = line.strip_prefix("```") else {
            continue;
        };
        let body: Vec<&str> = lines
            .by_ref()
            .map(|(_, l)| l)
            .take_while(|l| !l.starts_with("```"))
            .collect();
        match lang.trim() {
            "toml" => {
                dependencies = body
                    .iter()
                    .filter(|l| !l.trim().is_empty() && !l.starts_with('['))
                    .map(|l| l.to_string())
                    .collect();
            }
            "rust" => found.push(Snippet {
                line: i + 1,
                code: body.join("\n") + "\n",
                dependencies: dependencies.clone(),
            }),
            _ => {}
        }
    }
    found
}

/// `flakeid = "0.1"` or `flakeid = { version = "0.1", features = [...] }`
/// as a path dependency on this checkout, features kept.
fn local(dependency: &str, root: &Path) -> String {
    let Some(spec) = dependency.strip_prefix("flakeid =") else {
        return dependency.to_owned();
    };
    let path = format!("path = {:?}", root.display().to_string());
    match spec.trim().strip_prefix('{') {
        Some(table) => format!("flakeid = {{ {path}, {table}"),
        None => format!("flakeid = {{ {path} }}"),
    }
}

#[test]
fn every_readme_block_builds_and_runs_as_a_crate_of_its_own() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let snippets = snippets(&readme);
    assert!(!snippets.is_empty(), "the README has no Rust block");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), PathBuf::from)
        .join("readme-crates");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    for snippet in snippets {
        let at = format!("README.md line {}", snippet.line);
        for (i, line) in snippet.code.lines().enumerate() {
            let line = line.trim_start();
            assert!(
                line != "#" && !line.starts_with("# "),
                "{at}, line {} of the block is a hidden doc-test line: {line:?}",
                i + 1
            );
            assert!(
                !line.starts_with("#[cfg(feature"),
                "{at}: `{line}` refers to the user's crate's features once pasted"
            );
        }
        assert!(snippet.code.contains("fn main"), "{at}: no `fn main`");
        assert!(
            snippet
                .dependencies
                .iter()
                .any(|d| d.starts_with("flakeid")),
            "{at}: no TOML block above it names the flakeid dependency"
        );

        let dir = fresh_dir(&format!("readme-{}", snippet.line));
        let dependencies: Vec<String> = snippet
            .dependencies
            .iter()
            .map(|d| local(d, &root))
            .collect();
        std::fs::write(
            dir.join("Cargo.toml"),
            format!(
                "[package]\nname = \"readme-{}\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\
                 publish = false\n\n[dependencies]\n{}\n\n[workspace]\n",
                snippet.line,
                dependencies.join("\n")
            ),
        )
        .unwrap();
        // The checkout's lock file: the same versions as its own build, and
        // no registry lookup.
        std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("src/main.rs"), &snippet.code).unwrap();
        let out = Command::new(&cargo)
            .args(["run", "--quiet", "--offline"])
            .current_dir(&dir)
            .env("CARGO_TARGET_DIR", &target)
            .env_remove("RUSTFLAGS")
            .output()
            .expect("cargo runs");
        assert!(
            out.status.success(),
            "{at} failed as a crate of its own:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// A new empty directory under the system's temp dir.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("flakeid-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn the_block_reader_pairs_each_block_with_its_dependencies() {
    let readme = "```toml\n[dependencies]\nflakeid = { version = \"0.1\", features = [\"serde\"] }\n\
                  serde_json = \"1\"\n```\n\ntext\n\n```rust\nfn main() {}\n```\n```sh\nls\n```\n";
    let found = snippets(readme);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].line, 9);
    assert_eq!(found[0].code, "fn main() {}\n");
    assert_eq!(
        found[0].dependencies,
        [
            "flakeid = { version = \"0.1\", features = [\"serde\"] }",
            "serde_json = \"1\""
        ]
    );
    let root = Path::new("/src/flakeid");
    assert_eq!(
        local(&found[0].dependencies[0], root),
        "flakeid = { path = \"/src/flakeid\",  version = \"0.1\", features = [\"serde\"] }"
    );
    assert_eq!(
        local("flakeid = \"0.1\"", root),
        "flakeid = { path = \"/src/flakeid\" }"
    );
}
