//! A generator process of the fault test; see `flakeid_fault_tests::worker`.

fn main() {
    match flakeid_fault_tests::worker::Args::parse(std::env::args().skip(1)) {
        Ok(args) => flakeid_fault_tests::worker::main(args),
        Err(e) => {
            eprintln!("fault-worker: {e}");
            std::process::exit(2);
        }
    }
}
