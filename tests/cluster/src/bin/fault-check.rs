//! Checks a kept run directory again: `fault-check DIR`; with `--history
//! NODE`, also prints etcd's history of that node id's keys (node key and
//! mark), for the post-mortem of a violation.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args.first() else {
        eprintln!(
            "usage: fault-check DIR [--history NODE] (a run's directory, as fault-run --dir \
             leaves it)"
        );
        std::process::exit(2);
    };
    let dir = std::path::Path::new(dir);
    let report = flakeid_fault_tests::check::check(dir);
    print!("{}", flakeid_fault_tests::check::fault_lines(&report));
    println!("{report}");
    if let [_, flag, node] = args.as_slice()
        && flag == "--history"
    {
        let text = std::fs::read_to_string(dir.join("etcd-history")).unwrap_or_default();
        let suffixes = [format!("/nodes/{node}"), format!("/marks/{node}")];
        println!("etcd's history of node id {node} (revision, change, key, value, lease):");
        for c in flakeid_fault_tests::history::parse(&text) {
            if suffixes.iter().any(|s| c.key.ends_with(s.as_str())) {
                println!(
                    "{:>8} {:<6} {} {} {}",
                    c.revision, c.kind, c.key, c.value, c.lease
                );
            }
        }
    }
    if report.violations() > 0 {
        std::process::exit(1);
    }
}
