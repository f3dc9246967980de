//! The addon of the Node package `flakeid-rs`. Every class and function
//! here converts JavaScript arguments (`args.rs`), calls `flakeid_bindings`,
//! and throws its errors as the package's error classes (`errors.rs`,
//! which `index.js` defines). The package's documentation and TypeScript
//! types are `README.md` and `index.d.ts` beside this crate.

mod args;
mod errors;
mod generator;
mod hot;
mod layout;
mod source;
