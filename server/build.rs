//! Generates the gRPC messages, the service trait and the client stubs from
//! the shipped .proto. No `connect` helper (it would need tonic's transport
//! in the server's own build); the tests and the load client make a channel
//! themselves.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    tonic_prost_build::configure()
        .build_transport(false)
        .compile_protos(&["proto/flakeid/v1/flakeid.proto"], &["proto"])?;
    Ok(())
}
