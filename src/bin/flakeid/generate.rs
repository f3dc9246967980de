//! `flakeid gen`: new IDs, one a line, in any string form or as public
//! ids.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use flakeid::{Generator, IdFormat};

use crate::{Failure, LAYOUT_HELP, LayoutArg, parse_key, parse_layout, public_ids};

#[derive(Args)]
pub(crate) struct GenArgs {
    /// How many IDs.
    #[arg(short = 'n', long, default_value_t = 1)]
    count: u64,
    #[arg(long, default_value = "twitter", value_parser = parse_layout, help = LAYOUT_HELP)]
    layout: LayoutArg,
    /// The node id: all node fields as one number, the first field highest.
    /// Without it (or --node-field, or a layout's node=), 0, with a warning.
    #[arg(long, conflicts_with = "node_field")]
    node: Option<u64>,
    /// One node field, as NAME=VALUE (repeatable); every node field of the
    /// layout must be given (0 where 0 is meant).
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

/// `NAME=VALUE` of `--node-field`.
fn parse_node_field(s: &str) -> Result<(String, u64), String> {
    let (name, value) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?} is not NAME=VALUE"))?;
    let value = value
        .parse()
        .map_err(|e| format!("node field {name:?} value {value:?}: {e}"))?;
    Ok((name.to_owned(), value))
}

/// Prints `--count` IDs, taken in batches.
pub(crate) fn generate(args: GenArgs) -> Result<ExitCode, Failure> {
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
