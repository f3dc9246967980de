//! The `flakeid` command, run as a real process: what it prints, what it
//! refuses, and its exit codes.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use flakeid::{Id, IdFormat, Layout, PublicIds};

const KEY: &str = "000102030405060708090a0b0c0d0e0f";

fn flakeid(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_flakeid"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn flakeid_with_stdin(args: &[&str], stdin: impl AsRef<[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_flakeid"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_ref())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

/// A refusal: a message on stderr, a non-zero exit code, and no panic.
fn assert_refused(out: &Output, says: &str) {
    let err = stderr(out);
    assert!(!out.status.success(), "accepted; stderr: {err}");
    assert!(err.contains(says), "expected {says:?} in: {err}");
    assert!(!err.contains("panicked"), "panicked: {err}");
}

#[test]
fn decode_shows_the_time_and_fields_of_the_discord_example() {
    let out = flakeid(&["decode", "--layout", "discord", "175928847299117063"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "175928847299117063 2016-04-30T11:18:25.796Z worker=1 process=0 sequence=7\n"
    );
}

#[test]
fn decode_reads_every_string_form_and_says_which_it_read() {
    let id = Id::from_u64(175_928_847_299_117_063);
    let mut args = vec!["decode".to_string(), "--layout".into(), "discord".into()];
    for format in IdFormat::ALL {
        args.push(format.encode(id).to_string());
    }
    args.push("0x271065AC1020007".into());
    args.push("04w86bb0g4oo7".into()); // lowercase, O for 0
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = flakeid(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<String> = stdout(&out).lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), 6);
    for line in &lines {
        assert!(
            line.starts_with(
                "175928847299117063 2016-04-30T11:18:25.796Z worker=1 process=0 sequence=7"
            ),
            "{line}"
        );
    }
    assert!(lines[1].ends_with("(hex 0271065ac1020007)"), "{}", lines[1]);
    assert!(lines[2].ends_with("(base32 04W86BB0G4007)"), "{}", lines[2]);
    assert!(lines[3].ends_with("(base62 0Czks0tP37X)"), "{}", lines[3]);
}

#[test]
fn decode_json_has_every_part_and_a_javascript_safe_id() {
    let out = flakeid(&[
        "decode",
        "--json",
        "--layout",
        "epoch=1600000000000 fields=timestamp:41,clock_id:4,machine:8,sequence:10",
        "--format",
        "hex",
        "00001117000c3c07",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let layout = Layout::builder()
        .epoch_ms(1_600_000_000_000)
        .timestamp_bits(41)
        .clock_id(4)
        .node("machine", 8)
        .sequence(10)
        .build()
        .unwrap();
    let expected = layout
        .decode(Id::parse_hex("00001117000c3c07").unwrap())
        .unwrap();
    let json: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(json["id"], expected.id().to_string());
    assert_eq!(json["form"], "hex");
    assert_eq!(json["unix_ms"], expected.unix_ms());
    assert_eq!(json["time"], "2020-09-13T13:41:20.000Z");
    assert_eq!(json["clock_id"], expected.clock_id());
    assert_eq!(
        json["node_fields"]["machine"],
        expected.field("machine").unwrap()
    );
    assert_eq!(json["sequence"], expected.sequence());
    assert_eq!(expected.clock_id(), 3);
    assert_eq!(expected.sequence(), 7);
    assert_eq!(expected.field("machine"), Some(15));
}

#[test]
fn gen_makes_unique_ordered_ids_for_the_node_in_the_format_asked() {
    let out = flakeid(&[
        "gen",
        "-n",
        "5000",
        "--layout",
        "discord",
        "--node-field",
        "worker=3",
        "--node-field",
        "process=1",
        "--format",
        "base62",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5000);
    // Fixed width and sorted as text because sorted as numbers.
    assert!(lines.iter().all(|l| l.len() == 11));
    assert!(lines.windows(2).all(|w| w[0] < w[1]));
    let layout = Layout::discord();
    for line in lines {
        let decoded = layout.decode(Id::parse_base62(line).unwrap()).unwrap();
        assert_eq!(decoded.field("worker"), Some(3));
        assert_eq!(decoded.field("process"), Some(1));
    }
}

#[test]
fn gen_without_a_node_says_it_uses_node_0() {
    let out = flakeid(&["gen", "-n", "3"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("using node id 0"), "{}", stderr(&out));
    for line in stdout(&out).lines() {
        let id: Id = line.parse().unwrap();
        assert_eq!(Layout::twitter().decode(id).unwrap().node_id(), 0);
    }
    // Named, or read from a state file's generator line: no warning.
    let line = format!("{} node=37", Layout::twitter());
    for args in [vec!["gen", "--node", "0"], vec!["gen", "--layout", &line]] {
        let out = flakeid(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(stderr(&out), "", "{args:?}");
    }
}

#[test]
fn public_ids_from_gen_decode_back_with_the_key() {
    let out = flakeid(&["gen", "-n", "50", "--node", "9", "--public-key", KEY]);
    assert!(out.status.success(), "{}", stderr(&out));
    let public_ids = stdout(&out);
    let key: [u8; 16] = std::array::from_fn(|i| i as u8);
    let permutation = PublicIds::new(key);
    let internal: Vec<Id> = public_ids
        .lines()
        .map(|l| permutation.from_public(l.parse().unwrap()).unwrap())
        .collect();
    assert!(
        internal.windows(2).all(|w| w[0] < w[1]),
        "the IDs behind them are ordered"
    );
    let decoded = flakeid_with_stdin(&["decode", "--public-key", KEY], &public_ids);
    assert!(decoded.status.success(), "{}", stderr(&decoded));
    let decoded = stdout(&decoded);
    assert_eq!(decoded.lines().count(), 50);
    for (line, id) in decoded.lines().zip(&internal) {
        assert!(line.starts_with(&format!("{id} ")), "{line}");
        assert!(line.contains(" worker=9 "), "{line}");
        assert!(line.contains("(public id "), "{line}");
    }
}

#[test]
fn decode_reads_ids_from_standard_input_and_reports_each_bad_one() {
    let out = flakeid_with_stdin(
        &["decode", "--layout", "discord"],
        "175928847299117063 12a4\n\n0Czks0tP37X   zzz 18446744073709551616\n",
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out).lines().count(), 2);
    let err = stderr(&out);
    assert!(err.contains("\"12a4\""), "{err}");
    assert!(err.contains("pass --format"), "{err}");
    assert!(err.contains("form of a 3-character string"), "{err}");
    assert!(err.contains("larger than 2^64 - 1"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_token_that_is_not_utf8_is_one_bad_id_among_good_ones() {
    let out = flakeid_with_stdin(
        &["decode", "--layout", "discord"],
        b"175928847299117063 \xff\xfe\n0Czks0tP37X\n",
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out).lines().count(), 2, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("\"\u{fffd}\u{fffd}\": cannot tell the form of a 2-character string"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn bad_arguments_get_a_message_and_a_non_zero_exit() {
    for (args, says) in [
        (vec!["frobnicate"], "unrecognized subcommand"),
        (vec!["gen", "--layout", "tweeter"], "unknown layout"),
        (vec!["gen", "-n", "-3"], "-3"),
        (
            vec!["gen", "--node", "5000"],
            "node 5000 is out of range (0..=1023)",
        ),
        (vec!["gen", "--node-field", "rack=1"], "no field `rack`"),
        (vec!["gen", "--node-field", "worker"], "NAME=VALUE"),
        (
            vec!["gen", "--node-field", "datacenter=1"],
            "node field `worker` is not set",
        ),
        (vec!["gen", "--format", "base64"], "base64"),
        (vec!["gen", "--public-key", "abc"], "32 hex digits"),
        (
            vec!["decode", "--layout", "discord", "--format", "base32", "04U"],
            "invalid character 'U' at position 2",
        ),
        (
            vec!["decode", "--layout", "js-safe", "175928847299117063"],
            "sets bits above the layout's 53",
        ),
        (
            vec!["decode", "--public-key", KEY, "9223372036854775808"],
            "outside the 63-bit public-id domain",
        ),
        (
            vec![
                "decode",
                "--layout",
                "epoch=0 fields=timestamp:41,worker:30,sequence:12",
                "1",
            ],
            "more than the 64",
        ),
        (vec!["bench", "--threads", "0"], "0"),
        (vec!["bench", "--threads", "1,x"], "x"),
        (vec!["bench", "--duration", "forever"], "not a duration"),
        (vec!["bench", "--duration", "0s"], "outside 1ms"),
    ] {
        let out = flakeid(&args);
        assert_refused(&out, says);
    }
}

#[test]
fn a_custom_layout_with_a_repeated_key_or_a_bad_field_name_is_refused() {
    for (layout, says) in [
        (
            "epoch=1600000000000 epoch=0 fields=timestamp:41,sequence:12",
            "`epoch` is given twice",
        ),
        (
            "epoch=0 unit=1 unit=10 fields=timestamp:41,sequence:12",
            "`unit` is given twice",
        ),
        (
            "epoch=0 fields=timestamp:41,sequence:12 fields=timestamp:40,sequence:12",
            "`fields` is given twice",
        ),
        (
            "epoch=0 fields=timestamp:41,sequence:12 node=1 node=2",
            "`node` is given twice",
        ),
        (
            "epoch=0 fields=timestamp:41,a=b:3,sequence:12",
            "node field \"a=b\" has '=' in its name",
        ),
        (
            "epoch=0 fields=timestamp:41,rack.1:3,sequence:12",
            "node field \"rack.1\" has '.' in its name",
        ),
    ] {
        for command in [
            vec!["gen", "--layout", layout],
            vec!["decode", "--layout", layout, "1"],
        ] {
            assert_refused(&flakeid(&command), says);
        }
    }
}

#[test]
fn a_layout_past_its_end_is_an_error_not_a_panic() {
    // 10 bits of ms from 2020 ended a second after it began.
    let out = flakeid(&[
        "gen",
        "--layout",
        "epoch=1600000000000 fields=timestamp:10,sequence:4",
    ]);
    assert_refused(&out, "past the layout's last instant");
}

#[test]
fn bench_prints_the_table_progress_and_chart() {
    let dir = std::env::temp_dir().join(format!("flakeid-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("bench.svg");
    let out = flakeid(&[
        "bench",
        "--threads",
        "1,2",
        "--duration",
        "50ms",
        "--repeat",
        "3",
        "--check",
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&out);
    assert!(table.contains(" cores ("), "{table}");
    assert!(table.contains("load average"), "{table}");
    assert!(table.contains("the median of 3 runs of 50ms"), "{table}");
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("| ")).collect();
    assert_eq!(rows.len(), 3, "{table}");
    assert!(rows[0].contains("default (M IDs/s)"));
    assert!(rows[0].contains("thread-free clock (M IDs/s)"));
    assert!(rows[0].contains("mutex twin (M IDs/s)"));
    for (row, threads) in rows[1..].iter().zip(["1", "2"]) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        assert_eq!(cells[1], threads);
        // Each cell: `median (lowest–highest)`, the median within the spread.
        for cell in &cells[2..7] {
            let numbers: Vec<f64> = cell
                .split(|c: char| !(c.is_ascii_digit() || c == '.'))
                .filter(|s| !s.is_empty())
                .map(|s| s.parse().unwrap())
                .collect();
            let [median, low, high] = numbers[..] else {
                panic!("{row}");
            };
            assert!(0.0 < low && low <= median && median <= high, "{row}");
        }
    }
    let err = stderr(&out);
    assert!(err.contains("2 threads, default, round 3 of 3:"), "{err}");
    assert!(err.contains("all unique"), "{err}");
    let chart = std::fs::read_to_string(&svg).unwrap();
    assert_eq!(chart.matches("<polyline").count(), 3);
    assert!(chart.contains(">default<") && chart.contains(">mutex twin<"));
    std::fs::remove_dir_all(&dir).unwrap();
    let unwritable = flakeid(&[
        "bench",
        "--threads",
        "1",
        "--duration",
        "10ms",
        "--svg",
        "/nonexistent/dir/x.svg",
    ]);
    assert_refused(
        &unwritable,
        "cannot write the chart to /nonexistent/dir/x.svg",
    );
    // Refused before measuring, not after.
    assert!(stdout(&unwritable).is_empty(), "{}", stdout(&unwritable));
}

#[test]
fn a_closed_pipe_ends_gen_quietly() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_flakeid"))
        .args(["gen", "-n", "100000000", "--node", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 64];
    std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
}
