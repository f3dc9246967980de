//! Sets `cfg(flakeid_plant)` (the lease bugs planted on purpose,
//! `src/plant.rs`) when `FLAKEID_PLANT=1`, for CI's plant build: only this
//! crate and the crates that depend on it are built again for it, where
//! `RUSTFLAGS="--cfg flakeid_plant"` would rebuild every dependency too.
//! Nothing else: without the variable the crate builds as it is.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=FLAKEID_PLANT");
    if std::env::var_os("FLAKEID_PLANT").is_some_and(|v| v == "1") {
        println!("cargo::rustc-cfg=flakeid_plant");
    }
}
