//! Bad input in messages, quoted in part: a call can send kilobytes, and
//! an error that repeats them all is cut off (gRPC's metadata limit) or
//! unreadable.

/// The characters of a value a message shows.
const SHOWN: usize = 40;

/// `text` quoted for a message, cut to its first 40 characters with its
/// length said.
pub fn quote(text: &str) -> String {
    match text.char_indices().nth(SHOWN) {
        None => format!("{text:?}"),
        Some((end, _)) => format!("{:?}... ({} bytes)", &text[..end], text.len()),
    }
}

/// A message that may repeat input (serde's "nnnn: unknown field
/// `nnnn`"), each word longer than 40 characters cut as [`quote`] cuts a
/// value.
pub fn shorten(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(256));
    for (i, word) in message.split(' ').enumerate() {
        if i > 0 {
            out.push(' ');
        }
        match word.char_indices().nth(SHOWN) {
            Some((end, _)) => {
                out.push_str(&word[..end]);
                out.push_str(&format!("... ({} bytes)", word.len()));
            }
            None => out.push_str(word),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_input_is_quoted_in_part() {
        assert_eq!(quote("short"), "\"short\"");
        let long = "x".repeat(10_000);
        let quoted = quote(&long);
        assert!(quoted.len() < 80, "{quoted}");
        assert!(quoted.ends_with("... (10000 bytes)"), "{quoted}");
        let message = format!("unknown field `{long}`, expected `generator`");
        let short = shorten(&message);
        assert!(short.len() < 120, "{short}");
        assert!(short.starts_with("unknown field `xxx"), "{short}");
        assert!(
            short.ends_with("... (10003 bytes) expected `generator`"),
            "{short}"
        );
        assert_eq!(shorten("missing field `count`"), "missing field `count`");
    }
}
