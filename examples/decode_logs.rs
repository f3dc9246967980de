//! Decoding IDs from logs: find the IDs in each line and say when and where
//! they were made.
//!
//! ```text
//! cargo run --example decode_logs                     # a built-in sample log
//! cargo run --example decode_logs -- app.log discord  # a file, and its layout
//! ```
//!
//! A token counts as an ID if it is a `key=value` whose key ends in `id`
//! (decimal) or `_b62` (base62, as in URLs), whose value parses, and which
//! decodes under the layout (an ID with bits above the layout's fields was
//! not made by it, and is skipped).

use std::io::{BufRead, BufReader};

use flakeid::{Id, Layout};

const SAMPLE: &str = "\
2026-11-22T07:15:42.200Z INFO order created order_id=2124401418084446208 customer=42
2026-11-22T07:15:42.215Z INFO payment captured order_id=2124401418084446208 payment_id=2124401418147360771
2026-11-22T07:15:43.002Z WARN retry request_id=2124401421452697617 attempt=2
2026-11-22T07:15:43.010Z INFO page served path=/orders/2WvmQI3TZzc order_b62=2WvmQI3TZzc
2026-11-22T07:15:43.100Z INFO lookup failed order_id=18446744073709551615 status=404
";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let file = args.next();
    let layout = match args.next().as_deref() {
        None | Some("twitter") => Layout::twitter(),
        Some("discord") => Layout::discord(),
        Some("sonyflake") => Layout::sonyflake(),
        Some("js-safe") => Layout::js_safe(),
        Some(other) => return Err(format!("unknown layout {other:?}").into()),
    };
    let lines: Box<dyn BufRead> = match &file {
        Some(path) => Box::new(BufReader::new(
            std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?,
        )),
        None => Box::new(SAMPLE.as_bytes()),
    };
    for (number, line) in lines.lines().enumerate() {
        let line = line?;
        for token in line.split_whitespace() {
            let Some((key, value)) = token.split_once('=') else {
                continue;
            };
            let parsed = if key.ends_with("_b62") {
                Id::parse_base62(value)
            } else if key.ends_with("id") {
                value.parse::<Id>()
            } else {
                continue;
            };
            let Ok(id) = parsed else { continue };
            let Ok(decoded) = layout.decode(id) else {
                continue;
            };
            println!("line {:>3}: {key}={value} -> {decoded}", number + 1);
        }
    }
    Ok(())
}
