//! `flakeid-server`: see the crate's README, or `flakeid-server --help`.

use std::process::ExitCode;

fn main() -> ExitCode {
    flakeid_server::run(std::env::args_os()).into()
}
