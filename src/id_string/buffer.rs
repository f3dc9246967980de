//! [`IdString`]: an ID's string form in a stack buffer.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

/// The longest form, decimal `u64::MAX`.
pub(super) const MAX_LEN: usize = 20;

/// An [`Id`](crate::Id) in one of its string forms, held in a 20-byte stack
/// buffer: no allocation. Use it as a `&str` (it derefs to one) or print it.
///
/// Equality, order and hashing are those of the string.
///
/// ```
/// use flakeid::Id;
///
/// let id = Id::from_u64(175_928_847_299_117_063);
/// let text = id.to_base62();
/// assert_eq!(text.as_str(), "0Czks0tP37X");
/// assert_eq!(text.len(), 11);
/// assert_eq!(format!("/orders/{text}"), "/orders/0Czks0tP37X");
/// ```
#[derive(Clone, Copy)]
pub struct IdString {
    pub(super) buf: [u8; MAX_LEN],
    /// The text is `buf[start..]`, ASCII.
    pub(super) start: u8,
}

impl IdString {
    /// The text.
    ///
    /// ```
    /// use flakeid::Id;
    ///
    /// assert_eq!(Id::from_u64(255).to_hex().as_str(), "00000000000000ff");
    /// ```
    pub fn as_str(&self) -> &str {
        // Only `IdFormat::encode` builds one, from ASCII alphabets.
        std::str::from_utf8(&self.buf[self.start as usize..]).unwrap_or_default()
    }
}

impl Deref for IdString {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for IdString {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for IdString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl fmt::Debug for IdString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq for IdString {
    fn eq(&self, other: &IdString) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for IdString {}

impl PartialOrd for IdString {
    fn partial_cmp(&self, other: &IdString) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for IdString {
    fn cmp(&self, other: &IdString) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Hash for IdString {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl PartialEq<str> for IdString {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for IdString {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<IdString> for &str {
    fn eq(&self, other: &IdString) -> bool {
        *self == other.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::Id;

    #[test]
    fn id_string_is_a_small_copy_value_that_pads_like_a_str() {
        fn assert_copy_send_sync<T: Copy + Send + Sync>() {}
        assert_copy_send_sync::<IdString>();
        assert!(std::mem::size_of::<IdString>() <= 24);
        let text = Id::from_u64(62).to_base62();
        assert_eq!(format!("[{text:>13}]"), "[  00000000010]");
        assert_eq!(format!("{text:?}"), "\"00000000010\"");
        assert_eq!(&*text, "00000000010");
    }
}
