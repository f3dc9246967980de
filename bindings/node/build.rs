//! The link arguments a Node addon needs on this platform.

fn main() {
    napi_build::setup();
}
