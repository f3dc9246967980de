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
use flakeid::{Generator, Id, IdFormat, IdGenerator, Layout, PublicIds};

#[path = "../../benches/report/chart.rs"]
mod chart;

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
    /// The string form of the IDs. `auto`: a `0x` prefix means hex, only
    /// digits mean decimal, otherwise 16 characters mean hex, 13 base32 and
    /// 11 base62.
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
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    duration: Duration,
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

/// Instagram's own epoch (2011-08-24), from its engineering blog.
const INSTAGRAM_EPOCH_MS: u64 = 1_314_220_021_721;

fn parse_layout(s: &str) -> Result<LayoutArg, String> {
    let preset = |layout: Layout| LayoutArg {
        layout,
        name: s.to_owned(),
        node: None,
    };
    match s {
        "twitter" => return Ok(preset(Layout::twitter())),
        "discord" => return Ok(preset(Layout::discord())),
        "sonyflake" => return Ok(preset(Layout::sonyflake())),
        "js-safe" | "js_safe" => return Ok(preset(Layout::js_safe())),
        "instagram" => {
            return Layout::instagram(INSTAGRAM_EPOCH_MS)
                .map(preset)
                .map_err(|e| e.to_string());
        }
        _ => {}
    }
    if let Some(epoch) = s.strip_prefix("instagram:") {
        let epoch = epoch
            .parse()
            .map_err(|e| format!("instagram's epoch {epoch:?}: {e}"))?;
        return Layout::instagram(epoch)
            .map(preset)
            .map_err(|e| e.to_string());
    }
    if !s.contains('=') {
        return Err(format!(
            "unknown layout {s:?}: presets are twitter, discord, instagram, sonyflake, js-safe"
        ));
    }
    parse_custom_layout(s)
}

/// `epoch=<ms> [unit=<ms>] fields=<name>:<bits>,... [node=<id>]`.
fn parse_custom_layout(s: &str) -> Result<LayoutArg, String> {
    let number = |key: &str, v: &str| {
        v.parse::<u64>()
            .map_err(|e| format!("{key}={v:?} is not a number: {e}"))
    };
    let (mut epoch, mut unit, mut fields, mut node) = (None, None, None, None);
    for part in s.split_whitespace() {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| format!("{part:?} is not key=value"))?;
        let slot = match key {
            "epoch" => &mut epoch,
            "unit" => &mut unit,
            "node" => &mut node,
            "fields" => &mut fields,
            _ => {
                return Err(format!(
                    "unknown key {key:?} (expected epoch, unit, fields, node)"
                ));
            }
        };
        // A second value would silently win: a typo, never an intent.
        if slot.replace(value).is_some() {
            return Err(format!("`{key}` is given twice"));
        }
    }
    let epoch = number("epoch", epoch.ok_or("the layout needs epoch=<ms>")?)?;
    let unit = unit.map_or(Ok(1), |v| number("unit", v))?;
    let node = node.map(|v| number("node", v)).transpose()?;
    let fields = fields.ok_or("the layout needs fields=timestamp:<bits>,...")?;
    let mut builder = Layout::builder().epoch_ms(epoch).unit_ms(unit);
    for (i, field) in fields.split(',').enumerate() {
        let (name, bits) = field
            .split_once(':')
            .ok_or_else(|| format!("field {field:?} is not name:bits"))?;
        let bits = bits
            .parse::<u32>()
            .map_err(|e| format!("field {name:?} has bits {bits:?}: {e}"))?;
        builder = match (i, name) {
            (0, "timestamp") => builder.timestamp_bits(bits),
            (0, _) => return Err(format!("the first field must be timestamp, not {name:?}")),
            (_, "timestamp") => return Err("timestamp must be the first field".into()),
            (_, "sequence") => builder.sequence(bits),
            (_, "clock_id") => builder.clock_id(bits),
            (_, _) => builder.node(name.to_owned(), bits),
        };
    }
    let layout = builder.build().map_err(|e| e.to_string())?;
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
    let mut builder = Generator::builder(args.layout.layout.clone());
    if let Some(node) = args.node.or(args.layout.node) {
        builder = builder.node_id(node);
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

/// Reads `s` in `format`, guessing the form for `Auto`; returns the form used.
fn parse_id(s: &str, format: DecodeFormat) -> Result<(Id, IdFormat), String> {
    let form = match format {
        DecodeFormat::Decimal => IdFormat::Decimal,
        DecodeFormat::Hex => IdFormat::Hex,
        DecodeFormat::Base32 => IdFormat::Base32,
        DecodeFormat::Base62 => IdFormat::Base62,
        DecodeFormat::Auto => {
            if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                return Id::parse_hex(hex)
                    .map(|id| (id, IdFormat::Hex))
                    .map_err(|e| format!("not hex: {e}"));
            }
            let by_width = || {
                IdFormat::ALL
                    .into_iter()
                    .find(|f| f.width() == Some(s.len()))
            };
            match by_width() {
                _ if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => IdFormat::Decimal,
                Some(form) => form,
                None => {
                    let length = s.chars().count();
                    let plural = if length == 1 { "" } else { "s" };
                    return Err(format!(
                        "cannot tell its form ({length} character{plural}; hex has 16, base32 13, base62 11); pass --format"
                    ));
                }
            }
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
        let fields: serde_json::Map<String, serde_json::Value> = decoded
            .node_fields()
            .map(|(name, value)| (name.to_owned(), value.into()))
            .collect();
        let mut object = serde_json::json!({
            "input": input,
            "form": form.name(),
            // A string, like flakeid's serde: JavaScript rounds numbers above 2^53.
            "id": id.to_string(),
            "time": decoded.rfc3339().to_string(),
            "unix_ms": decoded.unix_ms(),
            "timestamp": decoded.timestamp(),
            "node_id": decoded.node_id(),
            "fields": fields,
            "sequence": decoded.sequence(),
            "clock_id": decoded.clock_id(),
            "layout": args.layout.name,
        });
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
    let mut rows = Vec::new();
    for &threads in &args.threads {
        let threads = threads as usize;
        let lock_free = Generator::builder(layout.clone()).build()?;
        let locked = Generator::builder(layout.clone()).build_mutex()?;
        let a = measure(&lock_free, "lock-free", threads, &args, live)?;
        let b = measure(&locked, "mutex", threads, &args, live)?;
        rows.push((threads, a, b));
    }
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "{cores} cores, {:?} per run, layout {}\n",
        args.duration, args.layout.name
    )?;
    writeln!(
        out,
        "| threads | lock-free (M IDs/s) | mutex (M IDs/s) | lock-free / mutex |"
    )?;
    writeln!(out, "|---:|---:|---:|---:|")?;
    for (threads, a, b) in &rows {
        writeln!(
            out,
            "| {threads} | {:.2} | {:.2} | {:.2}x |",
            a.per_second / 1e6,
            b.per_second / 1e6,
            a.per_second / b.per_second
        )?;
    }
    out.flush()?;
    if let Some((path, mut file)) = chart {
        let series = |name: &str, pick: fn(&(usize, Run, Run)) -> f64| chart::Series {
            name: name.to_owned(),
            points: rows.iter().map(|r| (r.0 as f64, pick(r) / 1e6)).collect(),
        };
        let svg = chart::line_chart(
            &format!(
                "flakeid: IDs per second ({cores} cores, {:?} per run)",
                args.duration
            ),
            "threads",
            "M IDs/s",
            &[
                series("lock-free", |r| r.1.per_second),
                series("mutex", |r| r.2.per_second),
            ],
        );
        file.write_all(svg.as_bytes())
            .map_err(|e| chart_error(path, &e))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn chart_error(path: &std::path::Path, e: &io::Error) -> String {
    format!("cannot write the chart to {}: {e}", path.display())
}

/// Runs `threads` threads calling `try_next_id` until the duration is up,
/// printing progress to standard error meanwhile.
fn measure<G: IdGenerator>(
    generator: &G,
    name: &str,
    threads: usize,
    args: &BenchArgs,
    live: bool,
) -> Result<Run, Failure> {
    let stop = AtomicBool::new(false);
    // One padded counter per thread, so counting does not add contention.
    let counts: Vec<CachePadded<AtomicU64>> = (0..threads)
        .map(|_| CachePadded::new(AtomicU64::new(0)))
        .collect();
    let label = format!(
        "{name}, {threads} thread{}",
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
            let id = generator.try_next_id().map_err(|e| e.to_string())?;
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
            ("instagram:soon", "instagram's epoch"),
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
