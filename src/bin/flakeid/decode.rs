//! `flakeid decode`: IDs in any string form, or public ids, read back as
//! their time and fields, in text or JSON.

use std::fmt::Write as _;
use std::io::{self, BufRead, BufWriter, Write};
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use flakeid::{Id, IdFormat, ParseAnyIdError, PublicIds};

use crate::{Failure, LAYOUT_HELP, LayoutArg, parse_key, parse_layout, public_ids};

#[derive(Args)]
pub(crate) struct DecodeArgs {
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

#[derive(Clone, Copy, ValueEnum)]
enum DecodeFormat {
    Auto,
    Decimal,
    Hex,
    Base32,
    Base62,
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

/// Decodes the IDs given, or those on standard input; goes on past a bad
/// one and fails at the end if there was any.
pub(crate) fn decode(args: DecodeArgs) -> Result<ExitCode, Failure> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
