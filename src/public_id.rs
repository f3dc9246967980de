//! Volume-hiding public IDs (feature `public-ids`): a keyed permutation that
//! turns an [`Id`] into an opaque number and back. The construction and its
//! limits are documented on [`PublicIds`].

use std::fmt;

use siphasher::sip::SipHasher24;

use crate::id::Id;
use crate::layout::mask;

/// Feistel rounds, as in FF1.
const ROUNDS: u8 = 10;

/// The narrowest domain accepted: format-preserving schemes on small domains
/// fall to message-recovery attacks (Bellare, Hoang and Tessaro, 2016), and
/// NIST SP 800-38G Rev. 1 asks for at least a million values.
const MIN_BITS: u32 = 32;

/// A keyed, reversible permutation of the IDs below 2^63 (or 2^`bits`):
/// opaque public ids that do not reveal order, volume, time or node.
///
/// Sequential IDs let an outsider count: two order numbers a day apart tell
/// how many orders came in between, and an ID tells when and on which node
/// it was made. Show the public id, keep the ID: [`PublicIds::to_public`]
/// maps an ID to its public id, [`PublicIds::from_public`] maps it back.
/// [`PublicIds::new`] covers the 63-bit IDs (a signed `BIGINT`);
/// [`PublicIds::with_bits`] other widths (53 for
/// [`Layout::js_safe`](crate::Layout::js_safe), 64 for layouts that use
/// every bit).
///
/// # The construction
///
/// An alternating (unbalanced) Feistel network over the `n`-bit domain
/// (`n = 63` by default), laid out as in NIST SP 800-38G's FF1: the input is
/// split into a high half of `u = ⌊n/2⌋` bits and a low half of `v = n − u`
/// bits, and each of 10 rounds replaces one half with itself XOR a keyed
/// pseudorandom function of the other, alternating which half is replaced:
///
/// ```text
/// (A, B) = (x >> v, x mod 2^v)
/// round i = 0..10:  m = u if i is even, else v
///                   (A, B) = (B, (A ⊕ F_k(i, n, B)) mod 2^m)
/// result = A · 2^v + B
/// ```
///
/// `F_k` is SipHash-2-4 (Aumasson and Bernstein, 2012, a PRF designed for
/// short inputs) under the 128-bit key, over the round number, the width and
/// the half. Each round is undone by recomputing `F_k` on the half it left
/// unchanged, so the map is a permutation *by construction*: every `n`-bit
/// value has exactly one public id, the round trip is exact, and no two IDs
/// collide, whatever the key. Because the halves alternate between `u` and
/// `v` bits, the odd width needs neither padding nor cycle walking; every
/// call costs the same 10 rounds.
///
/// Luby and Rackoff (1988) showed that a Feistel network with 3 rounds of a
/// pseudorandom function is a pseudorandom permutation (4 rounds: a strong
/// one). Their bounds hold up to about 2^(n/4) queries, some 2^16 here;
/// more rounds give better bounds (Patarin), which is why FF1 uses 10, and
/// so does this.
///
/// # What it hides, and what not
///
/// Without the key, a public id reveals nothing usable about the ID behind
/// it: not its **order** (consecutive IDs map to unrelated values), not the
/// **volume** between two IDs (subtracting two public ids counts nothing), and
/// not the **time or node** fields (the layout cannot be decoded).
///
/// It does **not** hide:
/// - that two requests name the same thing: a public id is deterministic
///   (use distinct keys per resource type so ids cannot be matched across them);
/// - what an observer learns otherwise: how many ids they were handed
///   themselves, and when;
/// - anything, once the key is known: anyone with the key inverts the map.
///
/// This is **not encryption** unless the key is secret and the construction
/// sound; the construction is standard but this instance (SipHash as the round
/// function, this encoding) has no published analysis. Treat it as
/// obfuscation against counting. Where confidentiality is required, use a
/// vetted format-preserving cipher (FF1, NIST SP 800-38G Rev. 1, over the same
/// 63-bit domain) or authenticated encryption with longer public ids.
///
/// Keys: 16 random bytes, kept secret like any credential. Changing the key
/// changes every public id, so keep it for as long as old public ids must
/// resolve.
///
/// # Example
///
/// ```
/// use flakeid::{Generator, Layout, PublicIds};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let public_ids = PublicIds::new(*b"sixteen byte key"); // from your secret store
/// let generator = Generator::builder(Layout::twitter()).node_id(1).build()?;
/// let (a, b) = (generator.next_id(), generator.next_id());
/// let (pa, pb) = (public_ids.to_public(a)?, public_ids.to_public(b)?);
/// println!("/orders/{}", pa.to_base62()); // /orders/5Kd2mAq9ZrB
/// assert_eq!(public_ids.from_public(pa)?, a);
/// assert_ne!(pb.to_u64().abs_diff(pa.to_u64()), 1);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct PublicIds {
    prf: SipHasher24,
    bits: u32,
}

impl PublicIds {
    /// A permutation of the 63-bit IDs (all of `0..2^63`, the range of a
    /// signed `BIGINT` and of every layout with a spare top bit).
    ///
    /// ```
    /// use flakeid::{Id, PublicIds};
    ///
    /// # fn main() -> Result<(), flakeid::PublicIdError> {
    /// let public_ids = PublicIds::new([7; 16]);
    /// let public = public_ids.to_public(Id::from_u64(1))?;
    /// assert!(public.to_u64() < 1 << 63);
    /// # Ok(())
    /// # }
    /// ```
    pub fn new(key: [u8; 16]) -> PublicIds {
        PublicIds::make(key, 63)
    }

    /// A permutation of the IDs below 2^`bits`, for `bits` in 32..=64: 53 for
    /// [`Layout::js_safe`](crate::Layout::js_safe), so public ids stay exact
    /// in JavaScript, or 64 for layouts that use every bit.
    ///
    /// Each width is a different permutation, even under the same key.
    ///
    /// # Errors
    ///
    /// [`PublicIdError::UnsupportedWidth`] for `bits` outside 32..=64.
    ///
    /// ```
    /// use flakeid::{Generator, Layout, PublicIds};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let public_ids = PublicIds::with_bits([7; 16], 53)?;
    /// let generator = Generator::builder(Layout::js_safe()).node_id(1).build()?;
    /// let public = public_ids.to_public(generator.next_id())?;
    /// assert!(public.to_u64() < 1 << 53); // Number.MAX_SAFE_INTEGER holds it
    /// assert!(PublicIds::with_bits([7; 16], 16).is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_bits(key: [u8; 16], bits: u32) -> Result<PublicIds, PublicIdError> {
        if !(MIN_BITS..=64).contains(&bits) {
            return Err(PublicIdError::UnsupportedWidth { bits });
        }
        Ok(PublicIds::make(key, bits))
    }

    /// Any width from 2 bits, for the exhaustive tests of small domains.
    fn make(key: [u8; 16], bits: u32) -> PublicIds {
        PublicIds {
            prf: SipHasher24::new_with_key(&key),
            bits,
        }
    }

    /// The width of the domain: IDs and public ids are below 2^`bits`.
    ///
    /// ```
    /// use flakeid::PublicIds;
    ///
    /// assert_eq!(PublicIds::new([0; 16]).bits(), 63);
    /// ```
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// The public id of `id`.
    ///
    /// # Errors
    ///
    /// [`PublicIdError::OutOfRange`] if `id` is 2^[`bits`](PublicIds::bits)
    /// or more.
    ///
    /// ```
    /// use flakeid::{Id, PublicIdError, PublicIds};
    ///
    /// # fn main() -> Result<(), PublicIdError> {
    /// let public_ids = PublicIds::new([42; 16]);
    /// let public = public_ids.to_public(Id::from_u64(1000))?;
    /// assert_eq!(public_ids.from_public(public)?, Id::from_u64(1000));
    /// assert_eq!(
    ///     public_ids.to_public(Id::MAX),
    ///     Err(PublicIdError::OutOfRange { id: u64::MAX, bits: 63 })
    /// );
    /// # Ok(())
    /// # }
    /// ```
    pub fn to_public(&self, id: Id) -> Result<Id, PublicIdError> {
        let x = self.check(id)?;
        let (mut a, mut b) = self.split(x);
        for round in 0..ROUNDS {
            let width = self.width_of_round(round);
            let c = (a ^ self.f(round, b)) & mask(width);
            a = b;
            b = c;
        }
        Ok(Id::from_u64(self.join(a, b)))
    }

    /// The ID behind a public id: the inverse of
    /// [`to_public`](PublicIds::to_public).
    ///
    /// Every value below 2^[`bits`](PublicIds::bits) is the public id of
    /// exactly one ID, so this succeeds for made-up public ids too; check
    /// that the result is an ID you issued.
    ///
    /// # Errors
    ///
    /// [`PublicIdError::OutOfRange`] if `public` is 2^`bits` or more.
    ///
    /// ```
    /// use flakeid::{Id, PublicIds};
    ///
    /// # fn main() -> Result<(), flakeid::PublicIdError> {
    /// let public_ids = PublicIds::new([42; 16]);
    /// let id = Id::from_u64(1_541_815_603_606_036_480);
    /// assert_eq!(public_ids.from_public(public_ids.to_public(id)?)?, id);
    /// # Ok(())
    /// # }
    /// ```
    pub fn from_public(&self, public: Id) -> Result<Id, PublicIdError> {
        let y = self.check(public)?;
        // After an even number of rounds the halves have their starting widths.
        let (mut a, mut b) = self.split(y);
        for round in (0..ROUNDS).rev() {
            let width = self.width_of_round(round);
            let c = b;
            b = a;
            a = (c ^ self.f(round, b)) & mask(width);
        }
        Ok(Id::from_u64(self.join(a, b)))
    }

    fn check(&self, id: Id) -> Result<u64, PublicIdError> {
        let x = id.to_u64();
        if x & !mask(self.bits) != 0 {
            return Err(PublicIdError::OutOfRange {
                id: x,
                bits: self.bits,
            });
        }
        Ok(x)
    }

    /// The width of the half a round replaces: FF1's alternation of `u` and `v`.
    /// `⌊bits/2⌋`, the width of the high half at the start.
    fn high(&self) -> u32 {
        self.bits / 2
    }

    /// `bits - high`, the width of the low half at the start.
    fn low(&self) -> u32 {
        self.bits - self.high()
    }

    /// A value as its high and low halves, in their starting widths.
    fn split(&self, x: u64) -> (u64, u64) {
        (x >> self.low(), x & mask(self.low()))
    }

    /// The inverse of [`split`](PublicIds::split).
    fn join(&self, high: u64, low: u64) -> u64 {
        high << self.low() | low
    }

    fn width_of_round(&self, round: u8) -> u32 {
        if round.is_multiple_of(2) {
            self.high()
        } else {
            self.low()
        }
    }

    /// The round function: SipHash-2-4 of (round, width, half).
    fn f(&self, round: u8, half: u64) -> u64 {
        let mut message = [0u8; 16];
        message[0] = round;
        message[1] = self.bits as u8;
        message[8..].copy_from_slice(&half.to_le_bytes());
        self.prf.hash(&message)
    }
}

/// Shows the width, never the key.
impl fmt::Debug for PublicIds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PublicIds")
            .field("bits", &self.bits)
            .finish_non_exhaustive()
    }
}

/// An ID or a width does not fit a [`PublicIds`](crate::PublicIds) permutation.
///
/// ```
/// use flakeid::{Id, PublicIdError, PublicIds};
///
/// let public_ids = PublicIds::new([1; 16]);
/// let err = public_ids.to_public(Id::MAX).unwrap_err();
/// assert_eq!(err, PublicIdError::OutOfRange { id: u64::MAX, bits: 63 });
/// assert_eq!(err.to_string(), "id 18446744073709551615 is outside the 63-bit public-id domain");
/// ```
#[cfg(feature = "public-ids")]
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PublicIdError {
    /// The value is 2^`bits` or more.
    OutOfRange {
        /// The value given.
        id: u64,
        /// The permutation's width.
        bits: u32,
    },
    /// The width is outside 32..=64 bits.
    UnsupportedWidth {
        /// The width given.
        bits: u32,
    },
}

#[cfg(feature = "public-ids")]
impl fmt::Display for PublicIdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PublicIdError::OutOfRange { id, bits } => {
                write!(f, "id {id} is outside the {bits}-bit public-id domain")
            }
            PublicIdError::UnsupportedWidth { bits } => write!(
                f,
                "a {bits}-bit public-id domain is not supported (32 to 64 bits)"
            ),
        }
    }
}

#[cfg(feature = "public-ids")]
impl std::error::Error for PublicIdError {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    const KEY: [u8; 16] = *b"flakeid test key";

    #[test]
    fn small_domains_are_permuted_exactly() {
        // Every width's structure is the same; small ones can be checked
        // value by value.
        let top = if cfg!(miri) { 6 } else { 16 };
        for bits in 2..=top {
            let p = PublicIds::make(KEY, bits);
            let mut seen = vec![false; 1 << bits];
            for x in 0..1u64 << bits {
                let y = p.to_public(Id::from_u64(x)).unwrap().to_u64();
                assert!(y < 1 << bits, "{bits} bits: {x} -> {y}");
                assert!(!seen[y as usize], "{bits} bits: {y} reached twice");
                seen[y as usize] = true;
                assert_eq!(p.from_public(Id::from_u64(y)), Ok(Id::from_u64(x)));
            }
        }
    }

    #[test]
    fn round_trips_across_the_whole_range() {
        let n = if cfg!(miri) { 20 } else { 20_000 };
        for bits in [32, 53, 63, 64] {
            let p = PublicIds::with_bits(KEY, bits).unwrap();
            let top = mask(bits);
            let mut z = 0x0123_4567_89ab_cdef_u64;
            let edges = [0, 1, top - 1, top, top >> 1, (top >> 1) + 1];
            let values = edges.into_iter().chain((0..n).map(|_| {
                z = z.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                z & top
            }));
            for x in values {
                let id = Id::from_u64(x);
                let public = p.to_public(id).unwrap();
                assert!(public.to_u64() <= top);
                assert_eq!(p.from_public(public), Ok(id), "{bits} bits, {x}");
                // And the other way round: from_public is a permutation too.
                assert_eq!(p.to_public(p.from_public(id).unwrap()), Ok(id));
            }
        }
    }

    #[test]
    fn values_outside_the_domain_are_refused() {
        let p = PublicIds::new(KEY);
        for x in [1 << 63, u64::MAX] {
            let err = PublicIdError::OutOfRange { id: x, bits: 63 };
            assert_eq!(p.to_public(Id::from_u64(x)), Err(err.clone()));
            assert_eq!(p.from_public(Id::from_u64(x)), Err(err));
        }
        for bits in [0, 1, 31, 65, u32::MAX] {
            assert_eq!(
                PublicIds::with_bits(KEY, bits).map(|p| p.bits()),
                Err(PublicIdError::UnsupportedWidth { bits })
            );
        }
        assert!(format!("{p:?}").contains("bits: 63"));
        assert!(!format!("{p:?}").contains("flakeid"), "the key leaks");
    }

    #[test]
    fn consecutive_ids_give_unordered_spread_out_public_ids() {
        // What a public id must not reveal, on 10,000 consecutive IDs of one
        // millisecond: their order, their distance, or any fixed bit.
        let p = PublicIds::new(KEY);
        let base = 1_541_815_603_606_036_480_u64; // a Twitter ID, sequence 0
        let public: Vec<u64> = (0..10_000)
            .map(|i| p.to_public(Id::from_u64(base + i)).unwrap().to_u64())
            .collect();
        assert_eq!(public.iter().collect::<HashSet<_>>().len(), public.len());
        let rising = public.windows(2).filter(|w| w[0] < w[1]).count();
        assert!((4_500..5_500).contains(&rising), "{rising} of 9,999 rise");
        let close = public
            .windows(2)
            .filter(|w| w[0].abs_diff(w[1]) < 1 << 50)
            .count();
        assert!(close < 100, "{close} neighbours within 2^50");
        for bit in 0..63 {
            let ones = public.iter().filter(|&&y| y >> bit & 1 == 1).count();
            assert!((4_500..5_500).contains(&ones), "bit {bit} set {ones} times");
        }
    }

    #[test]
    fn keys_and_widths_give_unrelated_permutations() {
        let a = PublicIds::new(KEY);
        let mut other_key = KEY;
        other_key[15] ^= 1;
        let b = PublicIds::new(other_key);
        let c = PublicIds::with_bits(KEY, 64).unwrap();
        let same = |p: &PublicIds, q: &PublicIds| {
            (0..1000)
                .filter(|&x| p.to_public(Id::from_u64(x)) == q.to_public(Id::from_u64(x)))
                .count()
        };
        assert_eq!(same(&a, &b), 0);
        assert_eq!(same(&a, &c), 0);
    }

    #[test]
    fn public_ids_stay_the_same_across_versions() {
        // Published public ids must resolve under every later version, so
        // the construction is pinned. These values come from an independent
        // Python implementation of the construction in the module docs
        // (SipHash-2-4 written from the paper).
        let p = PublicIds::new(*b"0123456789abcdef");
        let pinned: [(u64, u64); 3] = [
            (0, 9_208_166_112_036_595_559),
            (1, 9_104_741_561_008_228_083),
            (175_928_847_299_117_063, 9_157_404_924_784_559_096),
        ];
        for (id, public) in pinned {
            assert_eq!(
                p.to_public(Id::from_u64(id)),
                Ok(Id::from_u64(public)),
                "{id}"
            );
        }
    }
}
