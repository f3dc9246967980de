//! `flakeid`: make IDs, read them back, and measure the generators.
//!
//! Built with the `cli` feature: `cargo run --release --features cli --
//! <command>` in the repository, or installed with
//! `cargo install --git https://github.com/flakeid/flakeid --features cli flakeid`.
//!
//! ```sh
//! $ flakeid decode --layout discord 175928847299117063
//! 175928847299117063 2016-04-30T11:18:25.796Z worker=1 process=0 sequence=7
//!
//! $ flakeid decode --layout discord --json 0Czks0tP37X
//! {"clock_id":0,"fields":{"process":0,"worker":1},"form":"base62","id":"175928847299117063","input":"0Czks0tP37X","layout":"discord","node_id":32,"sequence":7,"time":"2016-04-30T11:18:25.796Z","timestamp":41944705796,"unix_ms":1462015105796}
//!
//! $ flakeid gen -n 3 --layout discord --node-field worker=3 --format base62
//! 1sI7gFbGWhc
//! 1sI7gFbGWhd
//! 1sI7gFbGWhe
//!
//! $ grep -o 'order_id=[0-9]*' app.log | cut -d= -f2 | flakeid decode   # IDs from standard input
//! ```
//!
//! - `decode` ([`decode`]) reads IDs in any string form: `--format auto`
//!   (the default) tells the form by its shape, as `flakeid::Id::parse_any`
//!   does (digits alone are decimal; else 16 characters hex, 13 Crockford
//!   base32, 11 base62; else a `0x` prefix hex). It prints the time
//!   (RFC 3339, UTC) and every field, and the form it read when that is not
//!   decimal; `--json` prints one object a line, with the ID as a string.
//! - `--layout` takes a preset (`twitter`, `discord`, `instagram` with
//!   Instagram's own 2011 epoch, `instagram:<epoch ms>`, `sonyflake`,
//!   `js-safe`) or a custom layout written like the `generator` line of a
//!   state file (`flakeid::persist`), for example
//!   `'epoch=1600000000000 unit=1 fields=timestamp:41,clock_id:4,machine:8,sequence:10'`
//!   (default: `twitter`).
//! - `gen` ([`generate`]) prints `-n` IDs for `--node` (or
//!   `--node-field name=value`) in `--format decimal|hex|base32|base62`;
//!   with `--public-key <32 hex digits>` it prints public ids, which
//!   `decode --public-key` reads back.
//! - `bench` ([`bench`]), e.g. `bench --threads 1,2,4 --duration 2s --svg
//!   chart.svg`, measures the lock-free generator against its mutex twin,
//!   with live progress on standard error, and prints a markdown table;
//!   `--check` also keeps every ID and checks that none repeats. How it
//!   measures, and what its numbers can say: `benches/README.md`.
//! - A bad argument or ID gets a message on standard error and a non-zero
//!   exit code; `decode` reports each ID it cannot read and goes on with the
//!   rest.

mod bench;
mod decode;
mod generate;

use std::io;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use flakeid::{Layout, PublicIds};

use crate::bench::BenchArgs;
use crate::decode::DecodeArgs;
use crate::generate::GenArgs;

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

pub(crate) const LAYOUT_HELP: &str = "A preset (twitter, discord, instagram, instagram:<epoch ms>, \
sonyflake, js-safe) or a custom layout in the form of a state file's generator line: \
'epoch=<ms> [unit=<ms>] fields=timestamp:<bits>,<name>:<bits>,...,sequence:<bits>' \
(fields high to low; `clock_id` names a clock-id field, other names are node fields, \
of up to 32 ASCII letters, digits, `_` and `-`; each key at most once); \
a state file's `node=<id>` at the end is gen's node id when none is given";

/// A layout named on the command line, with the node id its spec may carry.
#[derive(Clone)]
pub(crate) struct LayoutArg {
    pub(crate) layout: Layout,
    pub(crate) name: String,
    pub(crate) node: Option<u64>,
}

/// A layout spec (`Layout`'s `FromStr`: a preset name or
/// `epoch=<ms> [unit=<ms>] fields=...`), optionally followed by `node=<id>`,
/// so that a state file's `generator` line can be pasted as it is.
pub(crate) fn parse_layout(s: &str) -> Result<LayoutArg, String> {
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

/// A public-ids key: 32 hex digits, the 16 bytes big-endian.
pub(crate) fn parse_key(s: &str) -> Result<[u8; 16], String> {
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

/// What a command reports when it fails after its arguments were accepted.
pub(crate) type Failure = Box<dyn std::error::Error>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Gen(args) => generate::generate(args),
        Command::Decode(args) => decode::decode(args),
        Command::Bench(args) => bench::bench(args),
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
pub(crate) fn public_ids(key: [u8; 16], layout: &Layout) -> Result<PublicIds, Failure> {
    Ok(PublicIds::with_bits(key, layout.total_bits().max(32))?)
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
            ("instagram:soon", "instagram=\"soon\" is not a number"),
            ("twitter node=x", "node=\"x\" is not a number"),
        ] {
            let err = parse_layout(bad).err().unwrap_or_default();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn keys_are_checked() {
        assert_eq!(
            parse_key("000102030405060708090a0b0c0d0e0f"),
            Ok(std::array::from_fn(|i| i as u8))
        );
        assert!(parse_key("+00102030405060708090a0b0c0d0e0f").is_err());
        assert!(parse_key("0001").is_err());
    }
}
