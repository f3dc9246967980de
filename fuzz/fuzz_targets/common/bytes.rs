//! The fuzz targets' reader of integers off the input. Included with
//! `#[path]` by the targets that use it (each target is its own binary).
//! Changing how it reads changes what every committed corpus input means.

/// Reads little-endian integers off the input, zero when it runs out.
pub struct Bytes<'a>(pub &'a [u8]);

impl Bytes<'_> {
    pub fn u8(&mut self) -> u8 {
        let (first, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        *first
    }

    pub fn u64(&mut self) -> u64 {
        (0..8).fold(0, |v, i| v | u64::from(self.u8()) << (8 * i))
    }
}
