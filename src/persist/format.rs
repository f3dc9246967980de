//! The saved-state format: versioned, line-based text with a CRC-32.
//!
//! ```text
//! flakeid state v1
//! generator epoch=1288834974657 unit=1 fields=timestamp:41,datacenter:5,worker:5,sequence:12 node=37
//! clock 0
//! mark 0 1234567890
//! crc32 ab67ed80
//! ```
//!
//! `mark C T`: no ID with clock id `C` and a timestamp field above `T` was
//! issued. `clock C`: the clock id in use when the state was written (that
//! of the latest tick the generator entered; a save that reserves a tick on
//! another clock id comes before the generator moves there). The checksum
//! covers every byte before the `crc32` line.

use crate::error::StateError;
use crate::layout::Layout;

/// The newest format version this build reads and the one it writes.
pub(crate) const VERSION: u32 = 1;

const MAGIC: &str = "flakeid state v";

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SavedState {
    /// Describes the layout and node id the marks belong to.
    pub(crate) generator: String,
    /// The clock id in use when written.
    pub(crate) clock_id: u64,
    /// `(clock id, highest timestamp that may have been issued)`, by clock id.
    pub(crate) marks: Vec<(u64, u64)>,
}

/// The `generator` line's value for a layout and node id, compared as a whole
/// on restart: a state file is used only by the layout and node id it
/// describes.
///
/// Two different layouts never describe themselves alike: a field's name
/// cannot hold the separators (space, `,`, `:`, `=`, a line break) and only
/// the timestamp, sequence and clock-id fields carry their names, so the
/// text reads back as exactly one list of fields, each of a known kind (the
/// layout builder refuses any other name; `describes_exactly_one_layout`
/// reads descriptions back).
pub(crate) fn describe(layout: &Layout, node_id: u64) -> String {
    // The layout's `Display` is its spec (`epoch=… unit=… fields=…`), which
    // `Layout`'s `FromStr` and the `flakeid` command line read back.
    format!("{layout} node={node_id}")
}

impl SavedState {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut s = format!(
            "{MAGIC}{VERSION}\ngenerator {}\nclock {}\n",
            self.generator, self.clock_id
        );
        for (clock, tick) in &self.marks {
            s.push_str(&format!("mark {clock} {tick}\n"));
        }
        let crc = crc32(s.as_bytes());
        s.push_str(&format!("crc32 {crc:08x}\n"));
        s.into_bytes()
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<SavedState, StateError> {
        let corrupt = |reason: &str| StateError::Corrupt {
            reason: reason.to_string(),
        };
        if bytes.is_empty() {
            return Err(StateError::Truncated);
        }
        // From a store other than the file store, which reads no more.
        if bytes.len() as u64 > super::MAX_STATE_BYTES {
            return Err(StateError::TooLarge {
                limit: super::MAX_STATE_BYTES,
            });
        }
        // The version comes first, so a newer format is reported as such
        // rather than as damage.
        let first_end = bytes.iter().position(|&b| b == b'\n');
        let first = std::str::from_utf8(&bytes[..first_end.unwrap_or(bytes.len())])
            .map_err(|_| corrupt("the first line is not text"))?;
        let Some(version) = first.strip_prefix(MAGIC) else {
            return Err(if MAGIC.starts_with(first) && first_end.is_none() {
                StateError::Truncated
            } else {
                corrupt("it does not start with `flakeid state v`")
            });
        };
        let version: u32 = version
            .parse()
            .map_err(|_| corrupt("the format version is not a number"))?;
        if version > VERSION {
            return Err(StateError::UnsupportedVersion {
                found: version,
                supported: VERSION,
            });
        }
        if version == 0 {
            return Err(corrupt("format version 0 does not exist"));
        }
        let text = std::str::from_utf8(bytes).map_err(|_| corrupt("it is not UTF-8 text"))?;
        // The checksum line is last; without it the write was cut short.
        let body_end = match text.rfind("crc32 ") {
            Some(i) if i == 0 || text.as_bytes()[i - 1] == b'\n' => i,
            _ => return Err(StateError::Truncated),
        };
        let crc_line = &text[body_end..];
        let Some(crc_hex) = crc_line
            .strip_prefix("crc32 ")
            .and_then(|r| r.strip_suffix('\n'))
        else {
            return Err(StateError::Truncated);
        };
        let expected =
            u32::from_str_radix(crc_hex, 16).map_err(|_| corrupt("the checksum is not hex"))?;
        // Exactly as written: eight lowercase hex digits.
        if format!("{expected:08x}") != crc_hex || crc32(&bytes[..body_end]) != expected {
            return Err(corrupt("the checksum does not match"));
        }
        let mut generator = None;
        let mut clock_id = None;
        let mut marks: Vec<(u64, u64)> = Vec::new();
        for line in text[..body_end].lines().skip(1) {
            let (key, value) = line.split_once(' ').unwrap_or((line, ""));
            match key {
                "generator" if generator.is_none() => generator = Some(value.to_string()),
                "clock" if clock_id.is_none() => {
                    clock_id = Some(number(value).ok_or_else(|| corrupt("bad `clock` line"))?);
                }
                "mark" => {
                    let (c, t) = value
                        .split_once(' ')
                        .and_then(|(c, t)| Some((number(c)?, number(t)?)))
                        .ok_or_else(|| corrupt("bad `mark` line"))?;
                    if marks.iter().any(|&(seen, _)| seen == c) {
                        return Err(corrupt("two marks for one clock id"));
                    }
                    marks.push((c, t));
                }
                _ => return Err(corrupt(&format!("unexpected line `{line}`"))),
            }
        }
        Ok(SavedState {
            generator: generator.ok_or_else(|| corrupt("no `generator` line"))?,
            clock_id: clock_id.ok_or_else(|| corrupt("no `clock` line"))?,
            marks,
        })
    }
}

fn number(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// CRC-32 (IEEE 802.3, as in zlib and PNG).
fn crc32(bytes: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut table = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    0xedb8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
                k += 1;
            }
            table[i] = c;
            i += 1;
        }
        table
    };
    !bytes.iter().fold(!0u32, |crc, &b| {
        TABLE[((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> SavedState {
        SavedState {
            generator: describe(&Layout::twitter(), 37),
            clock_id: 2,
            marks: vec![(0, 1_234_567_890), (2, 99)],
        }
    }

    #[test]
    fn the_documented_example_is_a_valid_state() {
        let text = "flakeid state v1\n\
            generator epoch=1288834974657 unit=1 fields=timestamp:41,datacenter:5,worker:5,sequence:12 node=37\n\
            clock 0\n\
            mark 0 1234567890\n\
            crc32 ab67ed80\n";
        let state = SavedState::decode(text.as_bytes()).unwrap();
        assert_eq!(state.generator, describe(&Layout::twitter(), 37));
        assert_eq!(state.marks, [(0, 1_234_567_890)]);
        assert_eq!(state.encode(), text.as_bytes());
    }

    /// Reads a `generator` line back, by the documented grammar alone.
    fn read_back(line: &str) -> Option<(Layout, u64)> {
        let mut parts = line.split(' ');
        let mut value = |key: &str| parts.next()?.strip_prefix(key)?.strip_prefix('=');
        let epoch = value("epoch")?.parse().ok()?;
        let unit = value("unit")?.parse().ok()?;
        let fields = value("fields")?;
        let node = value("node")?.parse().ok()?;
        let mut builder = Layout::builder().epoch_ms(epoch).unit_ms(unit);
        for field in fields.split(',') {
            let (name, bits) = field.split_once(':')?;
            let bits = bits.parse().ok()?;
            builder = match name {
                "timestamp" => builder.timestamp_bits(bits),
                "sequence" => builder.sequence(bits),
                "clock_id" => builder.clock_id(bits),
                node => builder.node(node.to_owned(), bits),
            };
        }
        Some((builder.build().ok()?, node))
    }

    #[test]
    fn describes_exactly_one_layout() {
        let custom = |nodes: &[(&str, u32)], clock_id: u32| {
            let mut builder = Layout::builder()
                .epoch_ms(1_600_000_000_000)
                .timestamp_bits(40);
            if clock_id > 0 {
                builder = builder.clock_id(clock_id);
            }
            for &(name, bits) in nodes {
                builder = builder.node(name.to_owned(), bits);
            }
            builder.sequence(10).build()
        };
        let layouts = [
            Layout::twitter(),
            Layout::discord(),
            Layout::sonyflake(),
            Layout::js_safe(),
            custom(&[("a", 1), ("b", 5)], 0).unwrap(),
            custom(&[("a", 1), ("b", 5)], 3).unwrap(),
            custom(
                &[("Rack-7_b", 2), ("x0123456789012345678901234567890", 3)],
                1,
            )
            .unwrap(),
        ];
        for layout in layouts {
            for node in [0, 5, layout.max_node_id()] {
                let line = describe(&layout, node);
                assert_eq!(read_back(&line), Some((layout.clone(), node)), "{line}");
                let (spec, _) = line.rsplit_once(" node=").unwrap();
                assert_eq!(spec.parse::<Layout>().as_ref(), Ok(&layout), "{line}");
            }
        }
        // Names that would have read back as other fields (`a:1,b` as
        // `a:1` and `b:5`, a node `clock_id` as a clock-id field) or broken
        // the line are refused, so no layout describes itself as another.
        for name in ["a:1,b", "clock_id", "sequence", "a b", "a=1", "a\nmark 0 9"] {
            assert!(custom(&[(name, 5)], 0).is_err(), "{name:?}");
        }
    }

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn encode_decode_round_trips() {
        let state = sample();
        let bytes = state.encode();
        assert_eq!(SavedState::decode(&bytes), Ok(state));
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.starts_with("flakeid state v1\ngenerator epoch=1288834974657 unit=1 "));
        assert!(text.contains("\nmark 2 99\n"));
    }

    #[test]
    fn every_truncation_is_refused() {
        let bytes = sample().encode();
        for len in 0..bytes.len() {
            let err = SavedState::decode(&bytes[..len]).unwrap_err();
            assert!(
                matches!(err, StateError::Truncated | StateError::Corrupt { .. }),
                "length {len}: {err:?}"
            );
        }
        // A cut inside the checksum line is reported as truncation.
        assert_eq!(
            SavedState::decode(&bytes[..bytes.len() - 1]),
            Err(StateError::Truncated)
        );
        assert_eq!(SavedState::decode(b""), Err(StateError::Truncated));
    }

    #[test]
    fn every_flipped_bit_is_refused() {
        let bytes = sample().encode();
        // Under Miri every 7th bit (each bit of a byte, over seven bytes):
        // the full sweep is minutes there and runs in the plain tests.
        let stride = if cfg!(miri) { 7 } else { 1 };
        for i in (0..bytes.len() * 8).step_by(stride) {
            let mut damaged = bytes.clone();
            damaged[i / 8] ^= 1 << (i % 8);
            assert!(
                SavedState::decode(&damaged).is_err(),
                "bit {i} flipped went unnoticed"
            );
        }
    }

    #[test]
    fn a_newer_version_is_named_not_called_corrupt() {
        let mut bytes = sample().encode();
        bytes[15] = b'7';
        assert_eq!(
            SavedState::decode(&bytes),
            Err(StateError::UnsupportedVersion {
                found: 7,
                supported: 1
            })
        );
        let err = SavedState::decode(b"something else\n").unwrap_err();
        assert!(matches!(err, StateError::Corrupt { .. }));
    }

    #[test]
    fn duplicate_and_unknown_lines_are_corrupt_even_with_a_good_checksum() {
        let forge = |body: &str| {
            let crc = crc32(body.as_bytes());
            format!("{body}crc32 {crc:08x}\n").into_bytes()
        };
        for body in [
            "flakeid state v1\ngenerator x\nclock 0\nmark 0 1\nmark 0 2\n",
            "flakeid state v1\ngenerator x\nclock 0\nextra 1\n",
            "flakeid state v1\ngenerator x\nmark 0 1\n",
            "flakeid state v1\ngenerator x\nclock -1\n",
            "flakeid state v1\ngenerator x\nclock 0\nmark 0 99999999999999999999\n",
        ] {
            assert!(
                matches!(
                    SavedState::decode(&forge(body)),
                    Err(StateError::Corrupt { .. })
                ),
                "{body:?}"
            );
        }
        assert!(SavedState::decode(&forge("flakeid state v1\ngenerator x\nclock 3\n")).is_ok());
    }
}
