//! Generates the gRPC messages, the service trait and the client stubs from
//! the shipped .proto, and its encoded descriptor for gRPC reflection. No
//! `connect` helper (it would need tonic's transport in the server's own
//! build); the tests and the load client make a channel themselves.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let descriptor = std::path::PathBuf::from(std::env::var("OUT_DIR")?).join("flakeid.bin");
    tonic_prost_build::configure()
        .build_transport(false)
        // Node fields in name order on the wire, as in HTTP's JSON.
        .btree_map(".")
        .file_descriptor_set_path(descriptor)
        .compile_protos(&["proto/flakeid/v1/flakeid.proto"], &["proto"])?;
    Ok(())
}
