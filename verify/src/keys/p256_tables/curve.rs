//! P-256's field on 32-bit limbs, and the Jacobian point arithmetic the
//! table verifier sums its entries with.
//!
//! The `p256` crate's field multiply is crypto-bigint's generic one: a
//! Karatsuba product and a separate Montgomery reduction, over limbs of
//! whatever width the target has. In the component that is most of a
//! key-based verification (docs/performance.md). Here the Montgomery
//! product interleaves its reduction word by word, and since `p ≡ -1 mod
//! 2^32` each word's quotient is the low word itself and `p`'s words are
//! 0, 1 and `2^32 - 1`, so the reduction needs no general multiply.
//!
//! The sums are in Jacobian coordinates with the usual incomplete formulas
//! (`madd-2007-bl`, `add-2007-bl`, `dbl-2001-b` for `a = -3`), the equal and
//! opposite operands handled by branches. Everything here is public (a
//! signature, a digest, a public key), so variable time is fine.

use p256::elliptic_curve::point::AffineCoordinates;
use p256::AffinePoint;

/// An element of GF(p), `p = 2^256 - 2^224 + 2^192 + 2^96 - 1`, in
/// Montgomery form (`x · 2^256 mod p`), fully reduced, least significant
/// limb first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Fe([u32; 8]);

const P: [u32; 8] = [
    0xffff_ffff,
    0xffff_ffff,
    0xffff_ffff,
    0,
    0,
    0,
    1,
    0xffff_ffff,
];

/// `2^512 mod p`: multiplying by it takes a plain value into Montgomery form.
const R2: Fe = Fe([
    3,
    0,
    0xffff_ffff,
    0xffff_fffb,
    0xffff_fffe,
    0xffff_ffff,
    0xffff_fffd,
    4,
]);

impl Fe {
    pub(super) const ZERO: Fe = Fe([0; 8]);

    /// The element of the big-endian bytes `bytes`, or none when they are
    /// not below `p`.
    pub(super) fn from_be_bytes(bytes: &[u8; 32]) -> Option<Fe> {
        let mut limbs = [0u32; 8];
        for (limb, chunk) in limbs.iter_mut().zip(bytes.rchunks_exact(4)) {
            *limb = u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        }
        let (_, below_p) = sub_borrow(&limbs, &P);
        below_p.then(|| Fe(limbs).mul(&R2))
    }

    pub(super) fn is_zero(&self) -> bool {
        self.0 == [0; 8]
    }

    /// `self · other · 2^-256 mod p`: the Montgomery product, reduced a
    /// word at a time. Not inlined: the point formulas call it dozens of
    /// times, and one copy keeps the component small.
    #[inline(never)]
    pub(super) fn mul(&self, other: &Fe) -> Fe {
        let (a, b) = (&self.0, &other.0);
        // t < 2p after each round; t[8] holds its top word.
        let mut t = [0u32; 9];
        for &ai in a {
            let mut carry = 0u64;
            for j in 0..8 {
                let sum = u64::from(t[j]) + u64::from(ai) * u64::from(b[j]) + carry;
                t[j] = sum as u32;
                carry = sum >> 32;
            }
            let top = u64::from(t[8]) + carry;
            // Adding m·p, m = t[0] (p ≡ -1 mod 2^32), clears the low word,
            // which the shift then drops.
            let m = u64::from(t[0]);
            let mut carry = (u64::from(t[0]) + m * u64::from(P[0])) >> 32;
            for j in 1..8 {
                let sum = u64::from(t[j]) + m * u64::from(P[j]) + carry;
                t[j - 1] = sum as u32;
                carry = sum >> 32;
            }
            let sum = top + carry;
            t[7] = sum as u32;
            t[8] = (sum >> 32) as u32;
        }
        let low: [u32; 8] = [t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]];
        Fe(reduce_once(&low, t[8] != 0))
    }

    pub(super) fn square(&self) -> Fe {
        self.mul(self)
    }

    #[inline(never)]
    pub(super) fn add(&self, other: &Fe) -> Fe {
        let (sum, carry) = add_carry(&self.0, &other.0);
        Fe(reduce_once(&sum, carry))
    }

    #[inline(never)]
    pub(super) fn sub(&self, other: &Fe) -> Fe {
        match sub_borrow(&self.0, &other.0) {
            (diff, false) => Fe(diff),
            (diff, true) => Fe(add_carry(&diff, &P).0),
        }
    }

    pub(super) fn neg(&self) -> Fe {
        Fe::ZERO.sub(self)
    }

    pub(super) fn double(&self) -> Fe {
        self.add(self)
    }
}

/// `a + b` mod `2^256`, and whether it carried.
fn add_carry(a: &[u32; 8], b: &[u32; 8]) -> ([u32; 8], bool) {
    let mut sum = [0u32; 8];
    let mut carry = 0u64;
    for (i, s) in sum.iter_mut().enumerate() {
        let v = u64::from(a[i]) + u64::from(b[i]) + carry;
        *s = v as u32;
        carry = v >> 32;
    }
    (sum, carry != 0)
}

/// `a - b` mod `2^256`, and whether it borrowed (that is, `a < b`).
fn sub_borrow(a: &[u32; 8], b: &[u32; 8]) -> ([u32; 8], bool) {
    let mut diff = [0u32; 8];
    let mut borrow = 0i64;
    for (i, d) in diff.iter_mut().enumerate() {
        let v = i64::from(a[i]) - i64::from(b[i]) + borrow;
        *d = v as u32;
        borrow = v >> 32;
    }
    (diff, borrow != 0)
}

/// `x` (plus `2^256` when `high`), known to be below `2p`, reduced below `p`.
fn reduce_once(x: &[u32; 8], high: bool) -> [u32; 8] {
    let (diff, borrow) = sub_borrow(x, &P);
    match high || !borrow {
        true => diff,
        false => *x,
    }
}

/// A point in Jacobian coordinates: `(X/Z², Y/Z³)`, the identity when
/// `Z = 0`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Point {
    x: Fe,
    y: Fe,
    z: Fe,
}

/// An affine point that is not the identity.
#[derive(Clone, Copy, Debug)]
pub(super) struct Affine {
    pub(super) x: Fe,
    pub(super) y: Fe,
}

impl Affine {
    /// The point `p`, or none for the identity.
    pub(super) fn of(p: &AffinePoint) -> Option<Affine> {
        if *p == AffinePoint::IDENTITY {
            return None;
        }
        Some(Affine {
            x: Fe::from_be_bytes(&p.x().into())?,
            y: Fe::from_be_bytes(&p.y().into())?,
        })
    }

    pub(super) fn neg(&self) -> Affine {
        Affine {
            x: self.x,
            y: self.y.neg(),
        }
    }
}

impl Point {
    pub(super) const IDENTITY: Point = Point {
        x: Fe::ZERO,
        y: Fe::ZERO,
        z: Fe::ZERO,
    };

    pub(super) fn is_identity(&self) -> bool {
        self.z.is_zero()
    }

    pub(super) fn of(a: &Affine) -> Point {
        Point {
            x: a.x,
            y: a.y,
            z: ONE,
        }
    }

    pub(super) fn neg(&self) -> Point {
        Point {
            x: self.x,
            y: self.y.neg(),
            z: self.z,
        }
    }

    /// `2·self` (`dbl-2001-b`, `a = -3`). P-256 has no point of order two,
    /// so only the identity doubles to the identity, which `Z = 0` keeps.
    pub(super) fn double(&self) -> Point {
        let delta = self.z.square();
        let gamma = self.y.square();
        let beta = self.x.mul(&gamma);
        let t = self.x.sub(&delta).mul(&self.x.add(&delta));
        let alpha = t.double().add(&t);
        let beta4 = beta.double().double();
        let x = alpha.square().sub(&beta4.double());
        let z = self.y.add(&self.z).square().sub(&gamma).sub(&delta);
        let gamma2 = gamma.square();
        let y = alpha
            .mul(&beta4.sub(&x))
            .sub(&gamma2.double().double().double());
        Point { x, y, z }
    }

    /// `self + a` (`madd-2007-bl`).
    pub(super) fn add_affine(&self, a: &Affine) -> Point {
        if self.is_identity() {
            return Point::of(a);
        }
        let z1z1 = self.z.square();
        let u2 = a.x.mul(&z1z1);
        let s2 = a.y.mul(&self.z).mul(&z1z1);
        let h = u2.sub(&self.x);
        let r = s2.sub(&self.y).double();
        if h.is_zero() {
            return match r.is_zero() {
                true => self.double(),
                false => Point::IDENTITY,
            };
        }
        let hh = h.square();
        let i = hh.double().double();
        let j = h.mul(&i);
        let v = self.x.mul(&i);
        let x = r.square().sub(&j).sub(&v.double());
        let y = r.mul(&v.sub(&x)).sub(&self.y.mul(&j).double());
        let z = self.z.add(&h).square().sub(&z1z1).sub(&hh);
        Point { x, y, z }
    }

    /// `self + other` (`add-2007-bl`).
    pub(super) fn add(&self, other: &Point) -> Point {
        if self.is_identity() {
            return *other;
        }
        if other.is_identity() {
            return *self;
        }
        let z1z1 = self.z.square();
        let z2z2 = other.z.square();
        let u1 = self.x.mul(&z2z2);
        let u2 = other.x.mul(&z1z1);
        let s1 = self.y.mul(&other.z).mul(&z2z2);
        let s2 = other.y.mul(&self.z).mul(&z1z1);
        let h = u2.sub(&u1);
        let r = s2.sub(&s1).double();
        if h.is_zero() {
            return match r.is_zero() {
                true => self.double(),
                false => Point::IDENTITY,
            };
        }
        let i = h.double().square();
        let j = h.mul(&i);
        let v = u1.mul(&i);
        let x = r.square().sub(&j).sub(&v.double());
        let y = r.mul(&v.sub(&x)).sub(&s1.mul(&j).double());
        let z = self.z.add(&other.z).square().sub(&z1z1).sub(&z2z2).mul(&h);
        Point { x, y, z }
    }

    /// Whether the affine x-coordinate is `x` (`X = x·Z²`); never for the
    /// identity.
    pub(super) fn has_x(&self, x: &Fe) -> bool {
        !self.is_identity() && x.mul(&self.z.square()) == self.x
    }
}

/// One, in Montgomery form (`2^256 mod p`).
const ONE: Fe = Fe([
    1,
    0,
    0,
    0xffff_ffff,
    0xffff_ffff,
    0xffff_ffff,
    0xffff_fffe,
    0,
]);

#[cfg(test)]
mod tests;
