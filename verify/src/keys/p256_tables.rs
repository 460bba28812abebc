//! ECDSA P-256 verification, with a precomputed table per key for the keys
//! an instance verifies with again and again (a policy's cosign key, the
//! public-good Rekor and CT log keys).
//!
//! The `ecdsa` crate computes `u1·G + u2·Q` with a wNAF double-scalar
//! multiplication: 256 point doublings and about a hundred additions, and
//! the doublings were most of a cold key-based verification's CPU in the
//! component (docs/performance.md). With the multiples of `G` and `Q`
//! tabulated per signed radix-16 digit pair, the same sum is about 130
//! mixed additions and four doublings. A table costs about as much as two
//! verifications to build and 18 KB to keep, so a key gets one only on its
//! second verification, and at most [`MAX_TABLES`] keys keep theirs. A
//! key's first verification ([`verify_once`]) takes `u1·G` from the
//! generator's table and `u2·Q` by the same digits over `Q..8Q`.
//!
//! The checks are those of `ecdsa::hazmat::verify_prehashed` (whose result
//! the tests compare against on valid, tampered and edge-case signatures):
//! `r` and `s` non-zero (the signature type holds them so), the digest
//! truncated to the order's 256 bits, `R = (z/s)·G + (r/s)·Q` not the
//! identity, and `x(R) mod n = r`, read without an inversion as
//! `X = r·Z²` or, when `r + n < p`, `X = (r + n)·Z²`. The sums run on the
//! field and points of [`curve`]; the tables are built with `p256`'s own
//! arithmetic. Everything here is public, so variable time is fine.

mod curve;

use std::sync::{Arc, Mutex, OnceLock};

use curve::{Affine, Fe, Point};
use p256::elliptic_curve::group::Curve;
use p256::elliptic_curve::ops::Reduce;
use p256::elliptic_curve::Group;
use p256::{AffinePoint, FieldBytes, ProjectivePoint, Scalar};

/// Keys whose tables are kept; past this the oldest is dropped.
pub(crate) const MAX_TABLES: usize = 16;
/// Keys whose first verification is remembered, waiting for a second.
const MAX_SEEN: usize = 64;
/// Signed radix-16 digits of a scalar below the order: 64 nibbles and a carry.
const DIGITS: usize = 65;
/// One table per pair of digits: the even digit's, with the odd digit's
/// sum shifted by four doublings at the end.
const WINDOWS: usize = DIGITS.div_ceil(2);
/// `1·B ..= 8·B` for each window's base `B` (digits run from -8 to 8).
const MULTIPLES: usize = 8;

/// `j · 256^i · P` for every window `i` and `j` in `1..=8`, affine.
pub(crate) struct Table(Box<[[Affine; MULTIPLES]; WINDOWS]>);

impl Table {
    /// The table of `point`; none if an entry is the identity, which only
    /// the identity's own table has (the group's order is prime).
    pub(crate) fn new(point: ProjectivePoint) -> Option<Table> {
        let mut projective = Vec::with_capacity(WINDOWS * MULTIPLES);
        let mut base = point;
        for _ in 0..WINDOWS {
            let mut multiple = base;
            for _ in 0..MULTIPLES {
                projective.push(multiple);
                multiple += base;
            }
            for _ in 0..8 {
                base = base.double();
            }
        }
        let mut affine = vec![AffinePoint::IDENTITY; projective.len()];
        ProjectivePoint::batch_normalize(&projective, &mut affine);
        let origin = Affine {
            x: Fe::ZERO,
            y: Fe::ZERO,
        };
        let mut windows = Box::new([[origin; MULTIPLES]; WINDOWS]);
        for (window, chunk) in windows.iter_mut().zip(affine.chunks_exact(MULTIPLES)) {
            for (entry, point) in window.iter_mut().zip(chunk) {
                *entry = Affine::of(point)?;
            }
        }
        Some(Table(windows))
    }

    /// Adds `digit · 256^window · P` to `acc`.
    fn add_to(&self, acc: &mut Point, window: usize, digit: i8) {
        let entry = &self.0[window][usize::from(digit.unsigned_abs()).saturating_sub(1)];
        match digit {
            0 => {}
            1.. => *acc = acc.add_affine(entry),
            _ => *acc = acc.add_affine(&entry.neg()),
        }
    }
}

/// `scalar = Σ digits[i] · 16^i`, each digit in `-8..=8`.
fn radix16(scalar: &Scalar) -> [i8; DIGITS] {
    let bytes = scalar.to_bytes();
    let mut digits = [0i8; DIGITS];
    for (i, byte) in bytes.iter().rev().enumerate() {
        digits[2 * i] = (byte & 0xf) as i8;
        digits[2 * i + 1] = (byte >> 4) as i8;
    }
    for i in 0..DIGITS - 1 {
        let carry = (digits[i] + 8) >> 4;
        digits[i] -= carry << 4;
        digits[i + 1] += carry;
    }
    digits
}

/// `Σ kᵢ·Pᵢ` from the tables of the `Pᵢ`.
fn multiply<const N: usize>(terms: [(&Table, &Scalar); N]) -> Point {
    let digits = terms.map(|(table, k)| (table, radix16(k)));
    let mut even = Point::IDENTITY;
    let mut odd = Point::IDENTITY;
    for window in 0..WINDOWS {
        for (table, d) in &digits {
            table.add_to(&mut even, window, d[2 * window]);
            if let Some(&odd_digit) = d.get(2 * window + 1) {
                table.add_to(&mut odd, window, odd_digit);
            }
        }
    }
    for _ in 0..4 {
        odd = odd.double();
    }
    even.add(&odd)
}

/// `k·Q` without a table of `Q`: `k`'s signed radix-16 digits from the
/// most significant, each four doublings and an addition of one of
/// `Q ..= 8Q`.
fn multiply_once(q: &Affine, k: &Scalar) -> Point {
    let mut multiples = [Point::of(q); 8];
    multiples[1] = multiples[0].double();
    for j in 2..8 {
        multiples[j] = multiples[j - 1].add_affine(q);
    }
    let mut acc = Point::IDENTITY;
    for &digit in radix16(k).iter().rev() {
        for _ in 0..4 {
            acc = acc.double();
        }
        let multiple = &multiples[usize::from(digit.unsigned_abs()).saturating_sub(1)];
        match digit {
            0 => {}
            1.. => acc = acc.add(multiple),
            _ => acc = acc.add(&multiple.neg()),
        }
    }
    acc
}

/// The digest as a scalar, as `ecdsa` reads it: big-endian, its leftmost
/// 256 bits, reduced modulo the order.
fn digest_scalar(digest: &[u8]) -> Scalar {
    let kept = &digest[..digest.len().min(32)];
    let mut bytes = FieldBytes::default();
    bytes[32 - kept.len()..].copy_from_slice(kept);
    <Scalar as Reduce<FieldBytes>>::reduce(&bytes)
}

/// Verifies `signature` (its `s` already normalised, as the caller does)
/// over `digest` with the key whose table is `key`.
pub(crate) fn verify(key: &Table, digest: &[u8], signature: &p256::ecdsa::Signature) -> bool {
    check(digest, signature, |g, u1, u2| {
        multiply([(g, u1), (key, u2)])
    })
}

/// [`verify`] for a key without a table (its first verification): `u1·G`
/// still from the generator's table.
pub(crate) fn verify_once(
    key: &AffinePoint,
    digest: &[u8],
    signature: &p256::ecdsa::Signature,
) -> bool {
    let Some(q) = Affine::of(key) else {
        return false;
    };
    check(digest, signature, |g, u1, u2| {
        multiply([(g, u1)]).add(&multiply_once(&q, u2))
    })
}

/// Whether `x(R) mod n = r` for `R = sum(G's table, u1, u2)`, `u1 = z/s`
/// and `u2 = r/s`. Only with the generator's table: an instance that could
/// not make one verifies nothing here (it always can: see [`Table::new`]).
fn check(
    digest: &[u8],
    signature: &p256::ecdsa::Signature,
    sum: impl FnOnce(&Table, &Scalar, &Scalar) -> Point,
) -> bool {
    let Some(g) = generator() else {
        return false;
    };
    let (r, s) = signature.split_scalars();
    let Some(s_inv) = Option::<Scalar>::from(s.invert_vartime()) else {
        return false;
    };
    let u1 = digest_scalar(digest) * s_inv;
    let u2 = *r * s_inv;
    let point = sum(g, &u1, &u2);
    let r: [u8; 32] = r.to_bytes().into();
    // r < n < p, so it is an element; r + n is one when it is below p.
    let candidates = [Some(r), plus_order(&r)];
    candidates
        .iter()
        .flatten()
        .filter_map(Fe::from_be_bytes)
        .any(|x| point.has_x(&x))
}

/// `r + n` as big-endian bytes, none when it does not fit in 256 bits.
fn plus_order(r: &[u8; 32]) -> Option<[u8; 32]> {
    const ORDER: [u8; 32] = [
        0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63,
        0x25, 0x51,
    ];
    let mut sum = [0u8; 32];
    let mut carry = 0u16;
    for i in (0..32).rev() {
        let v = u16::from(r[i]) + u16::from(ORDER[i]) + carry;
        sum[i] = v as u8;
        carry = v >> 8;
    }
    (carry == 0).then_some(sum)
}

fn generator() -> Option<&'static Table> {
    static TABLE: OnceLock<Option<Table>> = OnceLock::new();
    TABLE
        .get_or_init(|| Table::new(ProjectivePoint::GENERATOR))
        .as_ref()
}

/// The keys seen, by SubjectPublicKeyInfo DER, oldest first, each with
/// its table once it has had a second verification.
pub(crate) struct Seen {
    keys: Vec<(Vec<u8>, Option<Arc<Table>>)>,
}

impl Seen {
    pub(crate) const fn new() -> Seen {
        Seen { keys: Vec::new() }
    }

    /// The table of the key `spki` (whose point is `point`), made on its
    /// second verification; `None` on its first.
    pub(crate) fn table_for(&mut self, spki: &[u8], point: &AffinePoint) -> Option<Arc<Table>> {
        let Some(at) = self.keys.iter().position(|(k, _)| k == spki) else {
            if self.keys.len() >= MAX_SEEN {
                self.keys.remove(0);
            }
            self.keys.push((spki.to_vec(), None));
            return None;
        };
        if let Some(table) = &self.keys[at].1 {
            return Some(Arc::clone(table));
        }
        let (key, _) = self.keys.remove(at);
        if self.tables() >= MAX_TABLES {
            if let Some(oldest) = self.keys.iter().position(|(_, t)| t.is_some()) {
                self.keys.remove(oldest);
            }
        }
        let table = Arc::new(Table::new(ProjectivePoint::from(*point))?);
        self.keys.push((key, Some(Arc::clone(&table))));
        Some(table)
    }

    /// How many keys have a table.
    pub(crate) fn tables(&self) -> usize {
        self.keys.iter().filter(|(_, t)| t.is_some()).count()
    }
}

/// [`Seen::table_for`] on the instance's keys; `None` if a panic poisoned
/// the lock (the caller then verifies without a table).
pub(crate) fn table_for(spki: &[u8], point: &AffinePoint) -> Option<Arc<Table>> {
    generator()?;
    static SEEN: Mutex<Seen> = Mutex::new(Seen::new());
    SEEN.lock().ok()?.table_for(spki, point)
}

#[cfg(test)]
mod tests;
