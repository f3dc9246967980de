//! What each worker process did besides issuing: how it ended, what it
//! printed. A worker fails the run if
//!
//! - it did not exit with status 0 (a panic, a crash, a signal), or was
//!   killed because it had not exited [`STOP_WITHIN`](crate::fleet::STOP_WITHIN)
//!   after it was asked to stop (it hung);
//! - it wrote anything on its standard error. No line is expected there:
//!   the worker writes its records on standard output, the library writes
//!   nothing, and what a crash or a panic leaves is what this looks for;
//! - it printed a line on its standard output that is not a record, or an
//!   `error` line: `try_next_id` answered something other than an ID or
//!   `Fenced` (with the default policies nothing else is expected);
//! - it built its generator, then lived at least the run's fenced-life
//!   limit (nemesis pauses not counted) and issued no ID: it stayed fenced
//!   for its whole life.

use super::Worker;
use crate::record::{Line, What};

/// Why a worker fails the run.
pub fn failures(w: &Worker, ids: u64, fenced_life_limit_ns: u64) -> Vec<String> {
    let mut out = Vec::new();
    let k = w.index;
    match w.lines.iter().rev().find_map(|l| match &l.what {
        What::Exit { status } => Some(status.as_str()),
        _ => None,
    }) {
        Some("exit status: 0") => {}
        Some(status) => out.push(format!("w{k} ended with {status}")),
        None => out.push(format!("w{k}: no exit recorded")),
    }
    if w.lines.iter().any(|l| l.what == What::Killed) {
        out.push(format!(
            "w{k} did not exit when asked to stop, and was killed"
        ));
    }
    if let Some(first) = w.stderr.lines().find(|l| !l.trim().is_empty()) {
        let n = w.stderr.lines().filter(|l| !l.trim().is_empty()).count();
        out.push(format!(
            "w{k} wrote {n} lines on stderr, the first: {first}"
        ));
    }
    if let Some(first) = w.unparsed.first() {
        out.push(format!(
            "w{k} printed {} lines that are not records, the first: {first}",
            w.unparsed.len()
        ));
    }
    let errors: Vec<&str> = w
        .lines
        .iter()
        .filter_map(|l| match &l.what {
            What::Error { error } => Some(error.as_str()),
            _ => None,
        })
        .collect();
    if let Some(first) = errors.first() {
        out.push(format!(
            "w{k}: {} errors other than Fenced, the first: {first}",
            errors.len()
        ));
    }
    if ids == 0
        && let Some(live) = live_after_build(&w.lines)
        && live >= fenced_life_limit_ns
    {
        out.push(format!(
            "w{k} was fenced for its whole life: built, then {:.1} s live without an ID",
            live as f64 / 1e9
        ));
    }
    out
}

/// How long a worker ran after its build, nemesis pauses left out; `None`
/// if it never built.
fn live_after_build(lines: &[Line]) -> Option<u64> {
    let built = lines
        .iter()
        .position(|l| matches!(l.what, What::Built { .. }))?;
    let mut live = 0;
    let mut from = Some(lines[built].mono_ns);
    let mut last = lines[built].mono_ns;
    for l in &lines[built + 1..] {
        last = l.mono_ns;
        match l.what {
            What::Paused => {
                if let Some(a) = from.take() {
                    live += l.mono_ns.saturating_sub(a);
                }
            }
            What::Resumed => from = from.or(Some(l.mono_ns)),
            What::End { .. } | What::Exit { .. } | What::Killed => {
                if let Some(a) = from.take() {
                    live += l.mono_ns.saturating_sub(a);
                }
                return Some(live);
            }
            _ => {}
        }
    }
    Some(live + from.map_or(0, |a| last.saturating_sub(a)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn line(at_s: u64, what: What) -> Line {
        Line {
            mono_ns: at_s * S,
            wall_ms: 0,
            what,
        }
    }

    fn worker(lines: Vec<Line>, stderr: &str) -> Worker {
        Worker {
            index: 3,
            plant: "none".into(),
            lines,
            stderr: stderr.into(),
            ..Worker::default()
        }
    }

    fn exit(at_s: u64, status: &str) -> Line {
        line(
            at_s,
            What::Exit {
                status: status.into(),
            },
        )
    }

    #[test]
    fn an_honest_worker_passes() {
        let w = worker(
            vec![
                line(0, What::Built { node: 1 }),
                line(40, What::Stopped),
                line(41, What::End { ids: 9 }),
                exit(41, "exit status: 0"),
            ],
            "",
        );
        assert_eq!(failures(&w, 9, 30 * S), Vec::<String>::new());
    }

    #[test]
    fn crashes_hangs_stderr_and_errors_fail() {
        let w = worker(
            vec![
                line(0, What::Built { node: 1 }),
                line(
                    1,
                    What::Error {
                        error: "the clock is 5ms behind".into(),
                    },
                ),
                line(2, What::Stopped),
                line(62, What::Killed),
                exit(62, "signal: 9 (SIGKILL)"),
            ],
            "thread 'main' panicked at src/worker.rs:1:1:\n",
        );
        let f = failures(&w, 5, 30 * S);
        assert_eq!(f.len(), 4, "{f:?}");
        assert!(f[0].contains("SIGKILL"));
        assert!(f[1].contains("killed"));
        assert!(f[2].contains("panicked"));
        assert!(f[3].contains("behind"));
    }

    #[test]
    fn fenced_for_a_whole_life_fails_and_pauses_do_not_count() {
        let lines = |pause_s: u64| {
            vec![
                line(0, What::Built { node: 1 }),
                line(10, What::Paused),
                line(10 + pause_s, What::Resumed),
                line(35 + pause_s, What::End { ids: 0 }),
                exit(35 + pause_s, "exit status: 0"),
            ]
        };
        // 35 s live, none of it issuing.
        let f = failures(&worker(lines(0), ""), 0, 30 * S);
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].contains("whole life"));
        // Live 25 s of 45: under the limit.
        let short = vec![
            line(0, What::Built { node: 1 }),
            line(10, What::Paused),
            line(30, What::Resumed),
            line(45, What::End { ids: 0 }),
            exit(45, "exit status: 0"),
        ];
        assert_eq!(
            failures(&worker(short, ""), 0, 30 * S),
            Vec::<String>::new()
        );
        // Issued: never fenced for its whole life.
        assert_eq!(
            failures(&worker(lines(0), ""), 1, 30 * S),
            Vec::<String>::new()
        );
        // Never built (waiting for a node id all along): not fenced.
        let waiting = vec![
            line(
                0,
                What::BuildFailed {
                    reason: "every node id in 0..=3 is held".into(),
                },
            ),
            line(60, What::End { ids: 0 }),
            exit(60, "exit status: 0"),
        ];
        assert_eq!(
            failures(&worker(waiting, ""), 0, 30 * S),
            Vec::<String>::new()
        );
    }
}
