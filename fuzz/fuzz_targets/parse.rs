//! Every string form flakeid reads, from arbitrary input.
//!
//! - `Id`'s decimal form (`FromStr`, `Id::parse_decimal`): accepted exactly
//!   when the input is 1 or more ASCII digits of a value below 2^64, then
//!   `Display` gives it back (without leading zeros); refused otherwise with
//!   the error naming the first bad character and its byte position, or the
//!   overflow, or the emptiness.
//! - The saved state (the persisted high-water mark), read through the public
//!   `StateStore`: arbitrary bytes never panic and are refused with a typed
//!   `StateError`; a valid state in the documented format is accepted, the
//!   restarted generator issues only after its marks, and what it saves back
//!   is canonical and keeps those marks; any single changed byte or
//!   truncation of a valid state is refused, and `OnInvalidState::Replace`
//!   then starts after the operator's instant. States forged line by line
//!   with a correct checksum (spellings the writer never uses, duplicate,
//!   missing, unknown and out-of-range lines, other versions, another
//!   generator) get exactly the verdict the format's rules give.
#![no_main]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use flakeid::{
    BuildError, GenerateError, Generator, Id, Layout, ManualClock, OnExhausted, OnInvalidState,
    ParseIdError, Persist, StateError, StateStore,
};
use libfuzzer_sys::fuzz_target;

#[path = "common/bytes.rs"]
mod bytes;
use bytes::Bytes;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 5 {
        0 => decimal(rest),
        1 => decimal_of_a_value(&mut Bytes(rest)),
        2 => arbitrary_state(rest),
        3 => valid_state(&mut Bytes(rest)),
        _ => forged_state(&mut Bytes(rest)),
    }
});

/// The decimal form of arbitrary text, against an independent reading.
fn decimal(bytes: &[u8]) {
    let Ok(s) = std::str::from_utf8(bytes) else {
        return;
    };
    let parsed = s.parse::<Id>();
    assert_eq!(Id::parse_decimal(s), parsed);
    let bad = s.bytes().position(|b| !b.is_ascii_digit());
    let digits = &s[..bad.unwrap_or(s.len())];
    // Digits are read left to right, so an overflow within them comes first.
    let overflows = !digits.is_empty() && digits.parse::<u64>().is_err();
    let expected = match bad {
        _ if overflows => Err(ParseIdError::Overflow),
        Some(position) => Err(ParseIdError::InvalidCharacter {
            position,
            character: s[position..].chars().next().unwrap(),
        }),
        None if s.is_empty() => Err(ParseIdError::Empty),
        None => Ok(Id::from_u64(digits.parse().unwrap())),
    };
    assert_eq!(parsed, expected, "{s:?}");
    match parsed {
        Ok(id) => {
            let trimmed = s.trim_start_matches('0');
            let canonical = if trimmed.is_empty() { "0" } else { trimmed };
            assert_eq!(id.to_string(), canonical);
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

/// Any value's decimal form reads back exactly, with or without leading
/// zeros, and its signed conversions agree with it.
fn decimal_of_a_value(b: &mut Bytes<'_>) {
    let id = Id::from_u64(b.u64());
    let text = id.to_string();
    assert_eq!(text, id.to_u64().to_string());
    assert_eq!(text.parse::<Id>(), Ok(id));
    let zeros = usize::from(b.u8() % 30);
    assert_eq!(format!("{}{text}", "0".repeat(zeros)).parse::<Id>(), Ok(id));
    match i64::try_from(id) {
        Ok(signed) => assert_eq!(Id::try_from(signed), Ok(id)),
        Err(_) => assert!(id.to_u64() > i64::MAX as u64),
    }
}

/// A state store in memory whose contents the target can see.
#[derive(Clone, Default)]
struct Memory(Arc<Mutex<Option<Vec<u8>>>>);

impl Memory {
    fn holding(bytes: &[u8]) -> Memory {
        Memory(Arc::new(Mutex::new(Some(bytes.to_vec()))))
    }

    fn contents(&self) -> Option<Vec<u8>> {
        self.0.lock().unwrap().clone()
    }
}

impl StateStore for Memory {
    fn load(&mut self) -> Result<Option<Vec<u8>>, StateError> {
        Ok(self.contents())
    }

    fn save(&mut self, state: &[u8]) -> Result<(), StateError> {
        *self.0.lock().unwrap() = Some(state.to_vec());
        Ok(())
    }
}

/// The multi-clock layout: clock ids 0..=3, so a state can hold several marks.
fn layout() -> Layout {
    Layout::builder()
        .epoch_ms(1_600_000_000_000)
        .timestamp_bits(41)
        .clock_id(2)
        .node("worker", 8)
        .sequence(10)
        .build()
        .unwrap()
}

const NODE: u64 = 77;

/// Marks, clock readings and the operator's instant in `valid_state` lie
/// within this many ms (ticks) of the epoch, well inside the layout's life.
const SPAN: u64 = 1 << 36;

fn build(
    store: &Memory,
    now_ms: u64,
    on_invalid: OnInvalidState,
) -> Result<Generator<ManualClock>, BuildError> {
    Generator::builder(layout())
        .node_id(NODE)
        .clock(ManualClock::new(now_ms))
        // Issue at once even when the clock is behind a mark.
        .on_exhausted(OnExhausted::Borrow {
            max_ahead: Duration::from_secs(1 << 30),
        })
        .persist(Persist::store(store.clone()).on_invalid_state(on_invalid))
        .build()
}

fn assert_refused(e: &BuildError) {
    assert!(
        matches!(
            e,
            BuildError::State(
                StateError::Corrupt { .. }
                    | StateError::Truncated
                    | StateError::UnsupportedVersion { .. }
                    | StateError::Mismatch { .. }
            )
        ),
        "{e:?}"
    );
    assert!(!e.to_string().is_empty());
}

/// Arbitrary bytes as a saved state: refused with a typed error, or, if
/// accepted, they carry the magic line and a checksum line that matches,
/// and the generator saves back the canonical form.
fn arbitrary_state(bytes: &[u8]) {
    let store = Memory::holding(bytes);
    match build(&store, 1_700_000_000_000, OnInvalidState::Refuse) {
        Ok(generator) => {
            assert!(bytes.starts_with(b"flakeid state v"), "accepted {bytes:?}");
            let text = std::str::from_utf8(bytes).expect("an accepted state is text");
            let body_end = text
                .rfind("crc32 ")
                .expect("an accepted state has a checksum");
            let crc_line = format!("crc32 {:08x}\n", crc32(&bytes[..body_end]));
            assert_eq!(text[body_end..], crc_line);
            // Polled: the marks may be further ahead of the clock than the
            // allowance, and then a blocking call rightly waits for the clock.
            match generator.poll_id() {
                Ok(_)
                | Err(GenerateError::Expired { .. } | GenerateError::SequenceExhausted { .. }) => {}
                Err(e) => panic!("after an accepted state: {e}"),
            }
            drop(generator);
            read_canonical(&store.contents().unwrap());
        }
        Err(e) => assert_refused(&e),
    }
}

/// The documented format, written here independently of flakeid.
fn encode(generator: &str, clock_id: u64, marks: &[(u64, u64)]) -> Vec<u8> {
    let mut s = format!("flakeid state v1\ngenerator {generator}\nclock {clock_id}\n");
    for (c, t) in marks {
        s.push_str(&format!("mark {c} {t}\n"));
    }
    let crc = crc32(s.as_bytes());
    s.push_str(&format!("crc32 {crc:08x}\n"));
    s.into_bytes()
}

/// Reads a state the way flakeid writes it, refusing any other spelling.
fn read_canonical(bytes: &[u8]) -> (String, u64, Vec<(u64, u64)>) {
    let text = std::str::from_utf8(bytes).unwrap();
    let mut lines = text.strip_suffix('\n').unwrap().split('\n');
    assert_eq!(lines.next(), Some("flakeid state v1"));
    let generator = lines
        .next()
        .unwrap()
        .strip_prefix("generator ")
        .unwrap()
        .to_string();
    let clock_id = lines
        .next()
        .unwrap()
        .strip_prefix("clock ")
        .unwrap()
        .parse()
        .unwrap();
    let mut marks = Vec::new();
    for line in lines.by_ref() {
        let Some(mark) = line.strip_prefix("mark ") else {
            assert!(line.starts_with("crc32 "));
            break;
        };
        let (c, t) = mark.split_once(' ').unwrap();
        marks.push((c.parse().unwrap(), t.parse().unwrap()));
    }
    assert_eq!(lines.next(), None);
    assert_eq!(encode(&generator, clock_id, &marks), bytes, "not canonical");
    (generator, clock_id, marks)
}

/// A valid state built from the input: accepted, honoured, saved back
/// canonically; each damaged copy refused.
fn valid_state(b: &mut Bytes<'_>) {
    let layout = layout();
    let generator_line = format!(
        "epoch={} unit=1 fields=timestamp:41,clock_id:2,worker:8,sequence:10 node={NODE}",
        layout.epoch_ms()
    );
    let clock_id = u64::from(b.u8() % 4);
    let mut marks = Vec::new();
    for c in 0..4 {
        if b.u8() % 2 == 1 {
            marks.push((c, b.u64() % SPAN));
        }
    }
    let now_ms = layout.epoch_ms() + b.u64() % SPAN;
    let bytes = encode(&generator_line, clock_id, &marks);
    let mark_of = |c: u64| marks.iter().find(|m| m.0 == c).map_or(0, |m| m.1);

    let store = Memory::holding(&bytes);
    let generator =
        build(&store, now_ms, OnInvalidState::Refuse).expect("a valid state is accepted");
    let id = generator.try_next_id().expect("an id after a valid state");
    let d = layout.decode(id).unwrap();
    assert_eq!((d.clock_id(), d.node_id()), (clock_id, NODE));
    assert!(
        d.timestamp() > mark_of(clock_id),
        "{id} is not after the saved mark"
    );
    drop(generator);
    let (saved_line, saved_clock, saved_marks) = read_canonical(&store.contents().unwrap());
    assert_eq!(
        (saved_line.as_str(), saved_clock),
        (generator_line.as_str(), clock_id)
    );
    for c in 0..4 {
        let saved = saved_marks.iter().find(|m| m.0 == c).map_or(0, |m| m.1);
        if c == clock_id {
            assert!(
                saved >= d.timestamp(),
                "the saved mark is below an issued id"
            );
        } else {
            assert_eq!(saved, mark_of(c), "the mark of clock id {c} changed");
        }
    }

    // One damaged copy: a changed byte or a cut.
    let mut damaged = bytes.clone();
    let at = usize::from(b.u8()) % bytes.len();
    match b.u8() {
        0 => damaged.truncate(at),
        x => damaged[at] ^= x,
    }
    let store = Memory::holding(&damaged);
    let e = build(&store, now_ms, OnInvalidState::Refuse).expect_err("a damaged state is refused");
    assert_refused(&e);
    assert_eq!(
        store.contents(),
        Some(damaged),
        "a refused state was overwritten"
    );
    let until = layout.epoch_ms() + b.u64() % SPAN;
    let replaced = OnInvalidState::Replace {
        issued_until_ms: until,
    };
    let generator = build(&store, now_ms, replaced).expect("Replace overrides a damaged state");
    let id = generator.try_next_id().unwrap();
    assert!(
        layout.decode(id).unwrap().unix_ms() > until,
        "{id} is not after {until}"
    );
}

/// A state forged line by line, with a correct checksum, against the
/// format's rules: accepted exactly when they say so, refused with the
/// error they name, and honoured when accepted.
fn forged_state(b: &mut Bytes<'_>) {
    #[derive(Debug, PartialEq)]
    enum Verdict {
        Accept,
        Corrupt,
        Unsupported,
        Mismatch,
    }
    let layout = layout();
    let ours = format!(
        "epoch={} unit=1 fields=timestamp:41,clock_id:2,worker:8,sequence:10 node={NODE}",
        layout.epoch_ms()
    );
    let zeros = |b: &mut Bytes<'_>| "0".repeat(usize::from(b.u8() % 3));
    let (first, mut verdict) = match b.u8() % 6 {
        0 | 1 => ("flakeid state v1".to_string(), Verdict::Accept),
        2 => ("flakeid state v01".to_string(), Verdict::Accept),
        3 => ("flakeid state v2".to_string(), Verdict::Unsupported),
        4 => ("flakeid state v0".to_string(), Verdict::Corrupt),
        _ => ("flakeid state v1\r".to_string(), Verdict::Corrupt),
    };
    let mut text = format!("{first}\n");
    let (mut generator, mut clock_id) = (None, None);
    let mut marks: Vec<(u64, u64)> = Vec::new();
    let mut corrupt = false;
    for _ in 0..usize::from(b.u8() % 8) {
        let line = match b.u8() % 9 {
            0 | 1 => {
                corrupt |= generator.is_some();
                generator.get_or_insert(ours.clone());
                format!("generator {ours}")
            }
            2 => {
                let other = ours.replace("node=77", "node=78");
                corrupt |= generator.is_some();
                generator.get_or_insert(other.clone());
                format!("generator {other}")
            }
            3 | 4 => {
                let c = u64::from(b.u8() % 5);
                corrupt |= clock_id.is_some();
                clock_id.get_or_insert(c);
                format!("clock {}{c}", zeros(b))
            }
            5 | 6 => {
                let (c, t) = (u64::from(b.u8() % 5), b.u64() % SPAN);
                corrupt |= marks.iter().any(|m| m.0 == c);
                marks.push((c, t));
                format!("mark {}{c} {}{t}", zeros(b), zeros(b))
            }
            7 => {
                corrupt = true;
                ["", "extra 1", "clock -1", "mark 1", "mark 1 x"][usize::from(b.u8() % 5)]
                    .to_string()
            }
            _ => {
                corrupt = true;
                format!("mark {} 1", "9".repeat(21))
            }
        };
        let end = if b.u8().is_multiple_of(4) {
            "\r\n"
        } else {
            "\n"
        };
        text.push_str(&format!("{line}{end}"));
    }
    let crc = crc32(text.as_bytes());
    text.push_str(&format!("crc32 {crc:08x}\n"));
    if verdict == Verdict::Accept {
        let out_of_range = clock_id.is_some_and(|c| c >= 4) || marks.iter().any(|m| m.0 >= 4);
        verdict = if corrupt || generator.is_none() || clock_id.is_none() {
            Verdict::Corrupt
        } else if generator.as_deref() != Some(ours.as_str()) {
            Verdict::Mismatch
        } else if out_of_range {
            Verdict::Corrupt
        } else {
            Verdict::Accept
        };
    }
    let now_ms = layout.epoch_ms() + b.u64() % SPAN;
    let store = Memory::holding(text.as_bytes());
    let built = build(&store, now_ms, OnInvalidState::Refuse);
    let got = match &built {
        Ok(_) => Verdict::Accept,
        Err(BuildError::State(StateError::Corrupt { .. })) => Verdict::Corrupt,
        Err(BuildError::State(StateError::UnsupportedVersion {
            found: 2,
            supported: 1,
        })) => Verdict::Unsupported,
        Err(BuildError::State(StateError::Mismatch { .. })) => Verdict::Mismatch,
        Err(e) => panic!("{e:?} for {text:?}"),
    };
    assert_eq!(got, verdict, "{text:?}");
    if let Ok(generator) = built {
        let clock_id = clock_id.unwrap();
        let mark = marks.iter().find(|m| m.0 == clock_id).map_or(0, |m| m.1);
        let id = generator
            .try_next_id()
            .expect("an id after an accepted state");
        let d = layout.decode(id).unwrap();
        assert_eq!(d.clock_id(), clock_id);
        assert!(
            d.timestamp() > mark,
            "{id} is not after the saved mark {mark}"
        );
        drop(generator);
        let (_, _, saved) = read_canonical(&store.contents().unwrap());
        for &(c, t) in &marks {
            let kept = saved.iter().find(|m| m.0 == c).map_or(0, |m| m.1);
            assert!(kept >= t, "the mark of clock id {c} went down");
        }
    }
}

/// CRC-32 (IEEE), bit by bit.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
