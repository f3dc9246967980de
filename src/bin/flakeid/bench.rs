//! `flakeid bench`, the main job: IDs per second from the default
//! generator, the same generator on `MonotonicClock::thread_free()`, and
//! the mutex twin, by thread count, each cell the median and spread of
//! repeated runs. Method and caveats: `benches/README.md`.

use std::collections::HashSet;
use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use clap::Args;
use crossbeam_utils::CachePadded;
use flakeid::report::{self, cpu_model};
use flakeid::{Generator, Id, IdGenerator, MonotonicClock};

use crate::{Failure, LAYOUT_HELP, LayoutArg, parse_layout};

#[derive(Args)]
pub(crate) struct BenchArgs {
    /// Thread counts to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16",
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    threads: Vec<u32>,
    /// How long each run lasts, e.g. 500ms, 2s, 1.5s, 1m30s.
    #[arg(long, default_value = "400ms", value_parser = parse_duration)]
    duration: Duration,
    /// How many times each cell is measured; the table shows the median and
    /// the spread (lowest to highest).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    repeat: u32,
    /// The layout to generate (default: 41 ms + 1 node + 22 sequence bits,
    /// so the generators are measured, not a sequence cap).
    #[arg(long, default_value = "epoch=1700000000000 unit=1 fields=timestamp:41,worker:1,sequence:22",
          value_parser = parse_layout, help = LAYOUT_HELP)]
    layout: LayoutArg,
    /// Also write the results as an SVG line chart.
    #[arg(long, value_name = "FILE")]
    svg: Option<std::path::PathBuf>,
    /// Keep every ID and check that none repeats (8 bytes of memory per ID).
    /// Each thread's IDs are always checked for order.
    #[arg(long)]
    check: bool,
}

/// `--duration`: humantime's grammar (`500ms`, `2s`, `1.5s`, `1m30s`, as
/// flakeid-server's durations), within 1 ms..=1 h.
fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s)
        .map_err(|e| format!("{s:?} is not a duration (e.g. 500ms, 2s, 1.5s): {e}"))?;
    if !(Duration::from_millis(1)..=Duration::from_secs(3600)).contains(&d) {
        return Err(format!("{s:?} is outside 1ms..=1h"));
    }
    Ok(d)
}

/// One measurement: IDs per second from `threads` threads for `duration`.
struct Run {
    per_second: f64,
}

/// The generators the main job compares, in the order they run.
const SUBJECTS: [&str; 3] = ["default", "thread-free clock", "mutex twin"];

/// A cell of the table: the median of the repeated runs and their spread.
#[derive(Clone, Copy)]
struct Cell {
    median: f64,
    low: f64,
    high: f64,
}

impl Cell {
    fn of(mut values: Vec<f64>) -> Cell {
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let median = if n % 2 == 1 {
            values[n / 2]
        } else {
            (values[n / 2 - 1] + values[n / 2]) / 2.0
        };
        Cell {
            median,
            low: values[0],
            high: values[n - 1],
        }
    }

    /// `12.34 (11.90–12.80)`, scaled by `scale`, with `suffix` after each.
    fn show(&self, scale: f64, suffix: &str) -> String {
        format!(
            "{}{suffix} ({}–{})",
            two_places(self.median / scale),
            two_places(self.low / scale),
            two_places(self.high / scale)
        )
    }
}

/// `x` with two decimal places, or as many more as it takes to show two
/// significant digits: a starved run's small rate is not shown as 0.
fn two_places(x: f64) -> String {
    if x == 0.0 || x.abs() >= 0.01 || !x.is_finite() {
        return format!("{x:.2}");
    }
    // 0.0042 needs 4 places: -log10 is 2.4, rounded up to 3, plus 1.
    let places = (-x.abs().log10()).ceil() as usize + 1;
    format!("{x:.places$}")
}

/// One row: a cell per subject, and the ratios of the default generator's
/// runs to the others', repetition by repetition.
struct Row {
    threads: usize,
    rates: [Cell; 3],
    over_mutex: Cell,
    over_thread_free: Cell,
}

/// Measures every thread count, then prints the table, the warnings and
/// the chart.
pub(crate) fn bench(args: BenchArgs) -> Result<ExitCode, Failure> {
    let layout = &args.layout.layout;
    let cores = thread::available_parallelism().map_or(1, |n| n.get());
    let live = io::stderr().is_terminal();
    // Opened first, so a path that cannot be written fails before the runs.
    let chart = match &args.svg {
        Some(path) => Some((
            path,
            std::fs::File::create(path).map_err(|e| chart_error(path, &e))?,
        )),
        None => None,
    };
    let load_before = load_average();
    let mut rows = Vec::new();
    for &threads in &args.threads {
        let threads = threads as usize;
        let default = Generator::builder(layout.clone()).single_node().build()?;
        let thread_free = Generator::builder(layout.clone())
            .single_node()
            .clock(MonotonicClock::thread_free())
            .build()?;
        let mutex = Generator::builder(layout.clone())
            .single_node()
            .build_mutex()?;
        let mut runs: [Vec<f64>; 3] = Default::default();
        for round in 0..args.repeat {
            // Each round measures all three in turn, in a rotating order, so
            // a machine getting busier or quieter affects them alike.
            for k in 0..3 {
                let i = (k + round as usize) % 3;
                let label = format!("{}, round {} of {}", SUBJECTS[i], round + 1, args.repeat);
                let run = match i {
                    0 => measure(&default, &label, threads, &args, live)?,
                    1 => measure(&thread_free, &label, threads, &args, live)?,
                    _ => measure(&mutex, &label, threads, &args, live)?,
                };
                runs[i].push(run.per_second);
            }
        }
        let ratios = |other: usize| {
            Cell::of(
                runs[0]
                    .iter()
                    .zip(&runs[other])
                    .map(|(a, b)| a / b)
                    .collect(),
            )
        };
        rows.push(Row {
            threads,
            over_mutex: ratios(2),
            over_thread_free: ratios(1),
            rates: runs.map(Cell::of),
        });
    }
    let load_after = load_average();
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "{cores} cores ({}), load average {} before and {} after the runs",
        cpu_model(),
        show_load(load_before),
        show_load(load_after)
    )?;
    writeln!(
        out,
        "layout {}; each cell: the median of {} runs of {:?}, (lowest–highest)\n",
        args.layout.name, args.repeat, args.duration
    )?;
    writeln!(
        out,
        "| threads | default (M IDs/s) | thread-free clock (M IDs/s) | mutex twin (M IDs/s) | default / mutex | default / thread-free |"
    )?;
    writeln!(out, "|---:|---:|---:|---:|---:|---:|")?;
    for row in &rows {
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            row.threads,
            row.rates[0].show(1e6, ""),
            row.rates[1].show(1e6, ""),
            row.rates[2].show(1e6, ""),
            row.over_mutex.show(1.0, "x"),
            row.over_thread_free.show(1.0, "x"),
        )?;
    }
    for warning in warnings(&rows, cores, load_before, load_after) {
        writeln!(out, "\n{warning}")?;
    }
    out.flush()?;
    if let Some((path, mut file)) = chart {
        let series = |i: usize| report::Series {
            name: SUBJECTS[i].to_owned(),
            points: rows
                .iter()
                .map(|r| (r.threads as f64, r.rates[i].median / 1e6))
                .collect(),
        };
        let svg = report::line_chart(
            &format!(
                "flakeid: IDs per second ({cores} cores, median of {} runs of {:?})",
                args.repeat, args.duration
            ),
            "threads",
            "M IDs/s",
            &[series(0), series(1), series(2)],
        );
        file.write_all(svg.as_bytes())
            .map_err(|e| chart_error(path, &e))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// What a reader of the table should know before trusting it.
fn warnings(rows: &[Row], cores: usize, before: Option<f64>, after: Option<f64>) -> Vec<String> {
    let mut warnings = Vec::new();
    let cores_f = cores as f64;
    if let Some(before) = before
        && before >= cores_f / 2.0
    {
        warnings.push(format!(
            "warning: the machine was busy before the runs (load average {before:.2} on {cores} cores): \
             other work shares the CPUs, so these numbers swing; run it again on a quiet machine."
        ));
    }
    if let (Some(before), Some(after)) = (before, after)
        && after > before + cores_f
    {
        warnings.push(format!(
            "warning: the load rose from {before:.2} to {after:.2} during the runs, more than these \
             threads account for: something else started meanwhile."
        ));
    }
    let noisy: Vec<String> = rows
        .iter()
        .filter(|r| r.rates.iter().any(|c| c.high > 1.25 * c.low))
        .map(|r| r.threads.to_string())
        .collect();
    if !noisy.is_empty() {
        warnings.push(format!(
            "warning: runs of the same cell differ by more than 25% at {} thread(s): the machine \
             is not quiet; the medians are the figures to read, the spreads say how far to trust them.",
            noisy.join(", ")
        ));
    }
    let over: Vec<String> = rows
        .iter()
        .filter(|r| r.threads > cores)
        .map(|r| r.threads.to_string())
        .collect();
    if !over.is_empty() {
        warnings.push(format!(
            "note: {} thread(s) outnumber the {cores} cores: those rows measure threads taking \
             turns on the cores (and a mutex holder descheduled while others wait), not \
             contention between cores.",
            over.join(", ")
        ));
    }
    warnings
}

/// The 1-minute load average (Linux), if known.
fn load_average() -> Option<f64> {
    report::load_average().map(|[one_minute, _, _]| one_minute)
}

fn show_load(load: Option<f64>) -> String {
    load.map_or_else(|| "unknown".to_owned(), |l| format!("{l:.2}"))
}

fn chart_error(path: &std::path::Path, e: &io::Error) -> String {
    format!("cannot write the chart to {}: {e}", path.display())
}

/// Runs `threads` threads taking IDs until the duration is up,
/// printing progress to standard error meanwhile.
fn measure<G: IdGenerator>(
    generator: &G,
    name: &str,
    threads: usize,
    args: &BenchArgs,
    live: bool,
) -> Result<Run, Failure> {
    // A layout past its end fails here, with its error, not in a thread.
    generator.try_next_id()?;
    let stop = AtomicBool::new(false);
    // One padded counter per thread, so counting does not add contention.
    let counts: Vec<CachePadded<AtomicU64>> = (0..threads)
        .map(|_| CachePadded::new(AtomicU64::new(0)))
        .collect();
    let label = format!(
        "{threads} thread{}, {name}",
        if threads == 1 { "" } else { "s" }
    );
    let start = Instant::now();
    let results: Vec<Result<Vec<Id>, String>> = thread::scope(|s| {
        let mut handles = Vec::with_capacity(threads);
        for count in &counts {
            let (stop, check) = (&stop, args.check);
            let spawned =
                thread::Builder::new().spawn_scoped(s, move || work(generator, stop, count, check));
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    handles.into_iter().for_each(|h| drop(h.join()));
                    return vec![Err(format!("cannot start thread: {e}"))];
                }
            }
        }
        while start.elapsed() < args.duration {
            thread::sleep(
                (args.duration - start.elapsed().min(args.duration))
                    .min(Duration::from_millis(100)),
            );
            if live {
                let total: u64 = counts.iter().map(|c| c.load(Ordering::Relaxed)).sum();
                eprint!(
                    "\r{label}: {:.1} s of {:.1} s, {:.1} M IDs   ",
                    start
                        .elapsed()
                        .as_secs_f64()
                        .min(args.duration.as_secs_f64()),
                    args.duration.as_secs_f64(),
                    total as f64 / 1e6
                );
            }
        }
        stop.store(true, Ordering::Relaxed);
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a thread panicked".to_owned()))
            })
            .collect()
    });
    let elapsed = start.elapsed().as_secs_f64();
    let mut kept = Vec::new();
    for result in results {
        kept.push(result?);
    }
    let total: u64 = counts.iter().map(|c| c.load(Ordering::Relaxed)).sum();
    if args.check {
        let unique: HashSet<Id> = kept.iter().flatten().copied().collect();
        if unique.len() as u64 != total {
            return Err(format!("{label}: {} duplicate IDs", total - unique.len() as u64).into());
        }
    }
    let per_second = total as f64 / elapsed;
    if live {
        eprint!("\r");
    }
    eprintln!(
        "{label}: {:.2} M IDs/s ({total} IDs{})",
        per_second / 1e6,
        if args.check { ", all unique" } else { "" }
    );
    Ok(Run { per_second })
}

/// One bench thread: IDs until `stop`, checking their order, counting them
/// in `count` every 256; with `keep`, returns them.
fn work<G: IdGenerator>(
    generator: &G,
    stop: &AtomicBool,
    count: &AtomicU64,
    keep: bool,
) -> Result<Vec<Id>, String> {
    let mut ids = Vec::new();
    let mut last = Id::MIN;
    let mut n = 0u64;
    // At least one round of 256 per thread, however late the thread starts
    // on a busy machine: every run measures a rate above 0.
    loop {
        for _ in 0..256 {
            // `next_id`, as the criterion bench calls it. With the default
            // policies it fails only past the layout's end, which `measure`
            // checks for first.
            let id = generator.next_id();
            if id <= last && n > 0 {
                return Err(format!("a thread saw {id:?} after {last:?}"));
            }
            last = id;
            n += 1;
            if keep {
                ids.push(id);
            }
        }
        count.store(n, Ordering::Relaxed);
        if stop.load(Ordering::Relaxed) {
            break;
        }
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_rates_keep_two_significant_digits() {
        assert_eq!(two_places(12.345), "12.35");
        assert_eq!(two_places(0.0), "0.00");
        assert_eq!(two_places(0.0042), "0.0042");
        assert_eq!(two_places(0.00051), "0.00051");
        assert_eq!(two_places(0.01), "0.01");
    }

    #[test]
    fn the_main_job_warns_about_what_makes_its_numbers_swing() {
        let steady = Cell::of(vec![10.0, 10.5, 11.0]);
        let noisy = Cell::of(vec![7.0, 10.0, 11.0]);
        assert_eq!((steady.median, steady.low, steady.high), (10.5, 10.0, 11.0));
        assert_eq!(Cell::of(vec![4.0, 1.0, 3.0, 2.0]).median, 2.5);
        let row = |threads, cell| Row {
            threads,
            rates: [cell, steady, steady],
            over_mutex: steady,
            over_thread_free: steady,
        };
        let quiet = [row(1, steady), row(2, steady)];
        assert!(warnings(&quiet, 2, Some(0.1), Some(1.5)).is_empty());
        assert!(warnings(&quiet, 2, None, None).is_empty());
        let busy = warnings(&quiet, 2, Some(1.2), Some(1.4));
        assert_eq!(busy.len(), 1);
        assert!(busy[0].contains("busy before the runs (load average 1.20 on 2 cores)"));
        let rose = warnings(&quiet, 2, Some(0.1), Some(3.0));
        assert!(rose[0].contains("rose from 0.10 to 3.00"), "{rose:?}");
        let swinging = warnings(&[row(1, steady), row(2, noisy)], 2, Some(0.1), Some(0.2));
        assert!(
            swinging[0].contains("more than 25% at 2 thread(s)"),
            "{swinging:?}"
        );
        let over = warnings(
            &[row(2, steady), row(4, steady), row(8, steady)],
            2,
            None,
            None,
        );
        assert!(
            over[0].contains("4, 8 thread(s) outnumber the 2 cores"),
            "{over:?}"
        );
    }

    #[test]
    fn durations_are_checked() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        for bad in ["", "0", "1.5", "-1s", "fast", "2h", "NaN", "inf"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
