//! Sets `cfg(flakeid_plant)` when `FLAKEID_PLANT=1`, as flakeid's own
//! `build.rs` does: the worker and the planted scenarios read it.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=FLAKEID_PLANT");
    if std::env::var_os("FLAKEID_PLANT").is_some_and(|v| v == "1") {
        println!("cargo::rustc-cfg=flakeid_plant");
    }
}
