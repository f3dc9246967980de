//! Checks a kept run directory again: `fault-check DIR`.

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: fault-check DIR (a run's directory, as fault-run --dir leaves it)");
        std::process::exit(2);
    };
    let report = flakeid_fault_tests::check::check(std::path::Path::new(&dir));
    print!("{}", flakeid_fault_tests::check::fault_lines(&report));
    println!("{report}");
    if report.violations() > 0 {
        std::process::exit(1);
    }
}
