//! What criterion measured: its estimates files, read back for the report.

use std::time::SystemTime;

/// Where criterion keeps its results: `CRITERION_HOME`, else the target
/// directory's `criterion/` (criterion asks `cargo metadata` for it; the
/// bench binary's own path says the same without a process).
fn criterion_dir() -> std::path::PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME") {
        return home.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            // The bench runs as <target>/<profile>/deps/peers-<hash>.
            let exe = std::env::current_exe().ok()?;
            exe.ancestors().nth(3).map(std::path::Path::to_path_buf)
        })
        .unwrap_or_else(|| "target".into());
    target.join("criterion")
}

/// Criterion's estimate of the time per iteration of `group/bench`, in ns:
/// the slope of its linear fit where it made one, else the mean. Only
/// results written by this run count.
pub fn estimate_ns(group: &str, bench: &str, since: SystemTime) -> Option<f64> {
    let path = criterion_dir()
        .join(group)
        .join(bench)
        .join("new")
        .join("estimates.json");
    if std::fs::metadata(&path).and_then(|m| m.modified()).ok()? < since {
        return None;
    }
    let json = std::fs::read_to_string(path).ok()?;
    point_estimate(&json, "slope").or_else(|| point_estimate(&json, "mean"))
}

/// `"key":{..."point_estimate":N...}` in criterion's estimates file.
fn point_estimate(json: &str, key: &str) -> Option<f64> {
    let at = json.find(&format!("\"{key}\":{{"))?;
    let rest = &json[at..];
    let value = &rest[rest.find("\"point_estimate\":")? + "\"point_estimate\":".len()..];
    let end = value.find([',', '}'])?;
    value[..end].trim().parse().ok()
}
