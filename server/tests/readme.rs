//! The README's curl walk-through, run: the server started with the
//! arguments its first line shows (on free ports, which replace the
//! README's 127.0.0.1:8080), each `$ ` command run by `sh`, and its output
//! compared with the README's line by line. Any run of digits in the README
//! stands for any run of digits (IDs and times differ from run to run);
//! everything else must match exactly.

mod support;

use std::process::Command;

use support::Server;

const README: &str = include_str!("../README.md");
const MARKER: &str = "<!-- the walk-through below is run by tests/readme.rs -->";
const README_ADDR: &str = "127.0.0.1:8080";

/// Whether `actual` is `expected` with each digit run replaced by some
/// digit run.
fn matches(expected: &str, actual: &str) -> bool {
    let (mut e, mut a) = (expected.chars().peekable(), actual.chars().peekable());
    loop {
        match (e.peek().copied(), a.peek().copied()) {
            (None, None) => return true,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                while e.peek().is_some_and(char::is_ascii_digit) {
                    e.next();
                }
                while a.peek().is_some_and(char::is_ascii_digit) {
                    a.next();
                }
            }
            (Some(x), Some(y)) if x == y => {
                e.next();
                a.next();
            }
            _ => return false,
        }
    }
}

/// The walk-through: commands with the lines they print.
fn walkthrough() -> Vec<(String, Vec<String>)> {
    let start = README
        .find(MARKER)
        .expect("the README marks its walk-through");
    let block = &README[start + MARKER.len()..];
    let block = block
        .split_once("```sh\n")
        .expect("a sh block after the marker")
        .1;
    let block = block.split_once("\n```").expect("the sh block ends").0;
    let mut steps: Vec<(String, Vec<String>)> = Vec::new();
    for line in block.lines() {
        match line.strip_prefix("$ ") {
            Some(command) => steps.push((command.to_owned(), Vec::new())),
            None => steps
                .last_mut()
                .expect("output after a command")
                .1
                .push(line.to_owned()),
        }
    }
    steps
}

#[test]
fn the_curl_walkthrough_prints_what_the_readme_says() {
    let steps = walkthrough();
    let (first, ready) = &steps[0];
    let args = first
        .strip_prefix("flakeid-server ")
        .and_then(|a| a.strip_suffix(" &"))
        .expect("the walk-through starts the server in the background");
    let args: Vec<&str> = args.split_whitespace().collect();
    let server = Server::start(&args, &[]);
    assert!(
        steps
            .last()
            .is_some_and(|(c, _)| c.starts_with("kill -TERM")),
        "the walk-through ends by stopping the server"
    );
    let readiness = format!(
        "flakeid-server ready http={} grpc={}",
        server.http, server.grpc
    );
    let expected_ready = ready[0]
        .replace(README_ADDR, &server.http.to_string())
        .replace("127.0.0.1:50051", &server.grpc.to_string());
    assert!(
        matches(&expected_ready, &readiness),
        "{expected_ready} / {readiness}"
    );

    let mut server = server;
    for (command, expected) in &steps[1..] {
        // The README stops its background server with the shell's `kill`;
        // here the test holds the process.
        if command.starts_with("kill -TERM") {
            server.terminate();
            let status = server.wait(std::time::Duration::from_secs(15));
            assert_eq!(status.code(), Some(0), "{}", server.stderr());
            continue;
        }
        let command = command.replace(README_ADDR, &server.http.to_string());
        let output = Command::new("sh").args(["-c", &command]).output().unwrap();
        assert!(output.status.success(), "{command}: {output:?}");
        let actual = String::from_utf8(output.stdout).unwrap();
        let actual: Vec<&str> = actual.lines().collect();
        assert_eq!(
            actual.len(),
            expected.len(),
            "{command}: printed\n{}\nthe README says\n{}",
            actual.join("\n"),
            expected.join("\n")
        );
        for (a, e) in actual.iter().zip(expected) {
            assert!(matches(e, a), "{command}:\n  printed {a}\n  README  {e}");
        }
    }
}

#[test]
fn digit_runs_match_any_digit_run_and_nothing_else() {
    assert!(matches("{\"id\":\"123\"}", "{\"id\":\"98765\"}"));
    assert!(!matches("{\"id\":\"123\"}", "{\"id\":\"98a65\"}"));
    assert!(!matches("count 5", "count x"));
    assert!(matches("a 1 b", "a 22 b"));
    assert!(!matches("a 1 b", "a 22 c"));
}
