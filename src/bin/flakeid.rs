//! `flakeid`: make IDs, read them back, and measure the generators.
//!
//! ```text
//! flakeid gen -n 5 --layout discord --node 33 --format base62
//! flakeid decode --layout discord 175928847299117063
//! flakeid bench --threads 1,2,4 --duration 2s --svg throughput.svg
//! ```

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::{self, BufRead, BufWriter, IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand, ValueEnum};
use crossbeam_utils::CachePadded;
use flakeid::report::{self, cpu_model};
use flakeid::{
    Generator, Id, IdFormat, IdGenerator, Layout, MonotonicClock, ParseAnyIdError, PublicIds,
};

#[derive(Parser)]
#[command(
    name = "flakeid",
    version,
    about = "Make Snowflake IDs, read them back, and measure the generators"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print new IDs, one a line.
    Gen(GenArgs),
    /// Read IDs back: time (RFC 3339, UTC), node fields, sequence, clock id.
    Decode(DecodeArgs),
    /// IDs per second from several threads: lock-free vs mutex, as a markdown table.
    Bench(BenchArgs),
}

const LAYOUT_HELP: &str = "A preset (twitter, discord, instagram, instagram:<epoch ms>, \
sonyflake, js-safe) or a custom layout in the form of a state file's generator line: \
'epoch=<ms> [unit=<ms>] fields=timestamp:<bits>,<name>:<bits>,...,sequence:<bits>' \
(fields high to low; `clock_id` names a clock-id field, other names are node fields, \
of up to 32 ASCII letters, digits, `_` and `-`; each key at most once); \
a state file's `node=<id>` at the end is gen's node id when none is given";

#[derive(Args)]
struct GenArgs {
    /// How many IDs.
    #[arg(short = 'n', long, default_value_t = 1)]
    count: u64,
    #[arg(long, default_value = "twitter", value_parser = parse_layout, help = LAYOUT_HELP)]
    layout: LayoutArg,
    /// The node id: all node fields as one number, the first field highest.
    /// Without it (or --node-field, or a layout's node=), 0, with a warning.
    #[arg(long, conflicts_with = "node_field")]
    node: Option<u64>,
    /// One node field, as NAME=VALUE (repeatable); fields not given are 0.
    #[arg(long = "node-field", value_name = "NAME=VALUE", value_parser = parse_node_field)]
    node_field: Vec<(String, u64)>,
    /// The string form to print.
    #[arg(long, value_enum, default_value_t = FormatArg::Decimal)]
    format: FormatArg,
    /// Print volume-hiding public ids made with this key (32 hex digits),
    /// over as many bits as the layout uses (at least 32).
    #[arg(long, value_name = "HEX", value_parser = parse_key)]
    public_key: Option<[u8; 16]>,
}

#[derive(Args)]
struct DecodeArgs {
    /// IDs to decode; read from standard input (whitespace-separated) if none.
    ids: Vec<String>,
    #[arg(long, default_value = "twitter", value_parser = parse_layout, help = LAYOUT_HELP)]
    layout: LayoutArg,
    /// The string form of the IDs. `auto`: told by the string's shape, as
    /// the library's `Id::parse_any` does: only digits mean decimal; else
    /// 16 characters mean hex, 13 base32, 11 base62; else a `0x` prefix
    /// means hex.
    #[arg(long, value_enum, default_value_t = DecodeFormat::Auto)]
    format: DecodeFormat,
    /// The IDs are public ids made with this key (32 hex digits), as by
    /// `gen --public-key` with the same layout.
    #[arg(long, value_name = "HEX", value_parser = parse_key)]
    public_key: Option<[u8; 16]>,
    /// One JSON object a line instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct BenchArgs {
    /// Thread counts to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16",
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    threads: Vec<u32>,
    /// How long each run lasts, e.g. 500ms, 2s, 1.5 (seconds).
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

#[derive(Clone, Copy, ValueEnum)]
enum FormatArg {
    Decimal,
    Hex,
    Base32,
    Base62,
}

impl From<FormatArg> for IdFormat {
    fn from(f: FormatArg) -> IdFormat {
        match f {
            FormatArg::Decimal => IdFormat::Decimal,
            FormatArg::Hex => IdFormat::Hex,
            FormatArg::Base32 => IdFormat::Base32,
            FormatArg::Base62 => IdFormat::Base62,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum DecodeFormat {
    Auto,
    Decimal,
    Hex,
    Base32,
    Base62,
}

/// A layout named on the command line, with the node id its spec may carry.
#[derive(Clone)]
struct LayoutArg {
    layout: Layout,
    name: String,
    node: Option<u64>,
}

/// A layout spec (`Layout`'s `FromStr`: a preset name or
/// `epoch=<ms> [unit=<ms>] fields=...`), optionally followed by `node=<id>`,
/// so that a state file's `generator` line can be pasted as it is.
fn parse_layout(s: &str) -> Result<LayoutArg, String> {
    let (nodes, rest): (Vec<&str>, Vec<&str>) = s
        .split_whitespace()
        .partition(|word| word.starts_with("node="));
    let node = match nodes[..] {
        [] => None,
        [word] => {
            let value = &word["node=".len()..];
            Some(
                value
                    .parse::<u64>()
                    .map_err(|e| format!("node={value:?} is not a number: {e}"))?,
            )
        }
        _ => return Err("`node` is given twice".into()),
    };
    let spec = rest.join(" ");
    let layout = spec.parse::<Layout>().map_err(|e| e.to_string())?;
    Ok(LayoutArg {
        layout,
        name: s.to_owned(),
        node,
    })
}

fn parse_node_field(s: &str) -> Result<(String, u64), String> {
    let (name, value) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?} is not NAME=VALUE"))?;
    let value = value
        .parse()
        .map_err(|e| format!("node field {name:?} value {value:?}: {e}"))?;
    Ok((name.to_owned(), value))
}

fn parse_key(s: &str) -> Result<[u8; 16], String> {
    if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "a key is 32 hex digits (16 bytes), not {} characters",
            s.chars().count()
        ));
    }
    u128::from_str_radix(s, 16)
        .map(u128::to_be_bytes)
        .map_err(|e| e.to_string())
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let (number, scale) = if let Some(ms) = s.strip_suffix("ms") {
        (ms, 1e-3)
    } else if let Some(secs) = s.strip_suffix('s') {
        (secs, 1.0)
    } else {
        (s, 1.0)
    };
    let secs = number
        .parse::<f64>()
        .map_err(|_| format!("{s:?} is not a duration (e.g. 500ms, 2s, 1.5)"))?
        * scale;
    if !(0.001..=3600.0).contains(&secs) {
        return Err(format!("{s:?} is outside 1ms..=1h"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// What a command reports when it fails after its arguments were accepted.
type Failure = Box<dyn std::error::Error>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Gen(args) => generate(args),
        Command::Decode(args) => decode(args),
        Command::Bench(args) => bench(args),
    };
    match result {
        Ok(code) => code,
        // The reader went away (`flakeid gen -n 1000000 | head`): not an error.
        Err(e) if is_broken_pipe(&*e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn is_broken_pipe(e: &(dyn std::error::Error + 'static)) -> bool {
    e.downcast_ref::<io::Error>()
        .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
}

/// Public ids over the bits the layout uses (at least 32).
fn public_ids(key: [u8; 16], layout: &Layout) -> Result<PublicIds, Failure> {
    Ok(PublicIds::with_bits(key, layout.total_bits().max(32))?)
}

fn generate(args: GenArgs) -> Result<ExitCode, Failure> {
    let layout = &args.layout.layout;
    let mut builder = Generator::builder(layout.clone());
    match args.node.or(args.layout.node) {
        Some(node) => builder = builder.node_id(node),
        None if args.node_field.is_empty() && layout.node_bits() > 0 => {
            // Two machines that both leave it out issue the same IDs.
            eprintln!(
                "flakeid: no --node or --node-field given: using node id 0; \
                 IDs from another generator on node 0 of this layout can repeat these"
            );
            builder = builder.single_node();
        }
        None => {}
    }
    for (name, value) in &args.node_field {
        builder = builder.node_field(name, *value);
    }
    let generator = builder.build()?;
    let public = args
        .public_key
        .map(|key| public_ids(key, generator.layout()))
        .transpose()?;
    let format = IdFormat::from(args.format);
    let mut out = BufWriter::new(io::stdout().lock());
    let mut left = args.count;
    while left > 0 {
        let batch = generator.try_next_ids(usize::try_from(left).unwrap_or(usize::MAX))?;
        left -= batch.len() as u64;
        for id in batch {
            let id = match &public {
                Some(p) => p.to_public(id)?,
                None => id,
            };
            writeln!(out, "{}", format.encode(id))?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Reads `s` in `format`, guessing the form for `Auto` (`Id::parse_any`);
/// returns the form used.
fn parse_id(s: &str, format: DecodeFormat) -> Result<(Id, IdFormat), String> {
    let form = match format {
        DecodeFormat::Decimal => IdFormat::Decimal,
        DecodeFormat::Hex => IdFormat::Hex,
        DecodeFormat::Base32 => IdFormat::Base32,
        DecodeFormat::Base62 => IdFormat::Base62,
        DecodeFormat::Auto => {
            return Id::parse_any(s).map_err(|e| match e {
                ParseAnyIdError::NoFormFits { .. } => format!("{e}; pass --format"),
                _ => e.to_string(),
            });
        }
    };
    form.parse(s)
        .map(|id| (id, form))
        .map_err(|e| format!("not {form}: {e}"))
}

fn decode(args: DecodeArgs) -> Result<ExitCode, Failure> {
    let layout = &args.layout.layout;
    let public = args
        .public_key
        .map(|key| public_ids(key, layout))
        .transpose()?;
    let mut out = BufWriter::new(io::stdout().lock());
    let mut failed = false;
    let mut one = |input: &str, out: &mut dyn Write| -> io::Result<()> {
        match describe(input, &args, public.as_ref()) {
            Ok(line) => writeln!(out, "{line}"),
            Err(message) => {
                failed = true;
                out.flush()?;
                eprintln!("error: {input:?}: {message}");
                Ok(())
            }
        }
    };
    if args.ids.is_empty() {
        // Bytes, not text lines: a token that is not UTF-8 is one bad ID,
        // reported like any other, instead of ending the whole run.
        for line in io::stdin().lock().split(b'\n') {
            for input in line?
                .split(u8::is_ascii_whitespace)
                .filter(|token| !token.is_empty())
            {
                one(&String::from_utf8_lossy(input), &mut out)?;
            }
        }
    } else {
        for input in &args.ids {
            one(input, &mut out)?;
        }
    }
    out.flush()?;
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// One decoded ID as a line of text or JSON.
fn describe(input: &str, args: &DecodeArgs, public: Option<&PublicIds>) -> Result<String, String> {
    let (parsed, form) = parse_id(input, args.format)?;
    let id = match public {
        Some(p) => p.from_public(parsed).map_err(|e| e.to_string())?,
        None => parsed,
    };
    let decoded = args.layout.layout.decode(id).map_err(|e| e.to_string())?;
    if args.json {
        // The library's `Decoded` serialization (the id as a string: JavaScript
        // rounds numbers above 2^53), and where it came from.
        let mut object = serde_json::to_value(decoded).map_err(|e| e.to_string())?;
        object["input"] = input.into();
        object["form"] = form.name().into();
        object["layout"] = args.layout.name.clone().into();
        if public.is_some() {
            object["public_id"] = parsed.to_string().into();
        }
        return Ok(object.to_string());
    }
    let mut line = format!("{id} {decoded}");
    if public.is_some() {
        let _ = write!(line, " (public id {input}, {form})");
    } else if input != &*IdFormat::Decimal.encode(id) {
        let _ = write!(line, " ({form} {input})");
    }
    Ok(line)
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
            "{:.2}{suffix} ({:.2}–{:.2})",
            self.median / scale,
            self.low / scale,
            self.high / scale
        )
    }
}

/// One row: a cell per subject, and the ratios of the default generator's
/// runs to the others', repetition by repetition.
struct Row {
    threads: usize,
    rates: [Cell; 3],
    over_mutex: Cell,
    over_thread_free: Cell,
}

fn bench(args: BenchArgs) -> Result<ExitCode, Failure> {
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
    while !stop.load(Ordering::Relaxed) {
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
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn custom_layouts_read_like_a_state_files_generator_line() {
        let twitter = "epoch=1288834974657 unit=1 fields=timestamp:41,datacenter:5,worker:5,sequence:12 node=37";
        let arg = parse_layout(twitter).unwrap();
        assert_eq!(arg.layout, Layout::twitter());
        assert_eq!(arg.node, Some(37));
        let sonyflake =
            parse_layout("epoch=1409529600000 unit=10 fields=timestamp:39,sequence:8,machine:16")
                .unwrap();
        assert_eq!(sonyflake.layout, Layout::sonyflake());
        let multi = parse_layout(
            "epoch=1600000000000 fields=timestamp:41,clock_id:4,machine:8,sequence:10",
        )
        .unwrap();
        assert_eq!(multi.layout.clock_id_bits(), 4);
        for (bad, says) in [
            ("tweeter", "unknown layout"),
            ("fields=timestamp:41,sequence:12", "epoch"),
            ("epoch=0", "fields"),
            ("epoch=x fields=timestamp:41,sequence:12", "not a number"),
            (
                "epoch=0 epoch=0 fields=timestamp:41,sequence:12",
                "`epoch` is given twice",
            ),
            (
                "epoch=0 fields=timestamp:41,a=b:3,sequence:12",
                "has '=' in its name",
            ),
            ("epoch=0 fields=worker:5,sequence:12", "first field"),
            (
                "epoch=0 fields=timestamp:41,worker,sequence:12",
                "name:bits",
            ),
            ("epoch=0 fields=timestamp:41,worker:5", "no sequence"),
            (
                "epoch=0 fields=timestamp:41,worker:30,sequence:12",
                "more than the 64",
            ),
            (
                "epoch=0 colour=red fields=timestamp:41,sequence:1",
                "unknown key",
            ),
            ("instagram:soon", "instagram=\"soon\" is not a number"),
            ("twitter node=x", "node=\"x\" is not a number"),
        ] {
            let err = parse_layout(bad).err().unwrap_or_default();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn auto_detection_follows_the_documented_rule() {
        let id = Id::from_u64(175_928_847_299_117_063);
        for format in IdFormat::ALL {
            let text = format.encode(id);
            assert_eq!(
                parse_id(&text, DecodeFormat::Auto),
                Ok((id, format)),
                "{format}"
            );
        }
        assert_eq!(
            parse_id("0x271065ac1020007", DecodeFormat::Auto),
            Ok((id, IdFormat::Hex))
        );
        // Digits alone read as decimal, whatever their length.
        assert_eq!(
            parse_id("00000000010", DecodeFormat::Auto),
            Ok((Id::from_u64(10), IdFormat::Decimal))
        );
        assert_eq!(
            parse_id("00000000010", DecodeFormat::Base62),
            Ok((Id::from_u64(62), IdFormat::Base62))
        );
        assert!(
            parse_id("abc", DecodeFormat::Auto)
                .unwrap_err()
                .contains("pass --format")
        );
        assert!(parse_id("", DecodeFormat::Auto).is_err());
    }

    #[test]
    fn durations_and_keys_are_checked() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        for bad in ["", "0", "-1s", "fast", "2h", "NaN", "inf"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_key("000102030405060708090a0b0c0d0e0f"),
            Ok(std::array::from_fn(|i| i as u8))
        );
        assert!(parse_key("+00102030405060708090a0b0c0d0e0f").is_err());
        assert!(parse_key("0001").is_err());
    }
}
