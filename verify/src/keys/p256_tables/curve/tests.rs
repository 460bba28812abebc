//! The field against crypto-bigint's generic modular arithmetic, and the
//! points against `p256`'s own, on pseudo-random values and the edges.

use super::*;
use p256::elliptic_curve::bigint::{NonZero, U256};
use p256::elliptic_curve::{Group, PrimeField};
use p256::{ProjectivePoint, Scalar};
use sha2::{Digest, Sha256};

const P_HEX: &str = "FFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFF";

fn modulus() -> NonZero<U256> {
    NonZero::<U256>::from_be_hex(P_HEX)
}

fn big(bytes: &[u8; 32]) -> U256 {
    U256::from_be_slice(bytes)
}

fn bytes_of(x: &U256) -> [u8; 32] {
    x.to_be_bytes().into()
}

/// Deterministic values below `p`: SHA-256 of a counter, reduced, and the
/// edges 0, 1, 2, p - 2, p - 1 and 2^255.
fn values() -> Vec<[u8; 32]> {
    let p = modulus();
    let mut out: Vec<[u8; 32]> = (0u64..48)
        .map(|i| bytes_of(&big(&Sha256::digest(i.to_be_bytes()).into()).rem_vartime(&p)))
        .collect();
    let minus = |k: u64| bytes_of(&p.get().wrapping_sub(&U256::from_u64(k)));
    out.extend([
        bytes_of(&U256::ZERO),
        bytes_of(&U256::ONE),
        bytes_of(&U256::from_u64(2)),
        minus(2),
        minus(1),
        bytes_of(&U256::ONE.shl_vartime(255)),
    ]);
    out
}

/// The big-endian bytes of the element's value.
impl Fe {
    fn to_be_bytes(self) -> [u8; 32] {
        let plain = self.mul(&Fe([1, 0, 0, 0, 0, 0, 0, 0]));
        let mut out = [0u8; 32];
        for (chunk, limb) in out.rchunks_exact_mut(4).zip(plain.0) {
            chunk.copy_from_slice(&limb.to_be_bytes());
        }
        out
    }
}

fn fe(bytes: &[u8; 32]) -> Fe {
    Fe::from_be_bytes(bytes).expect("below p")
}

#[test]
fn elements_read_and_write_their_bytes_and_refuse_p_and_above() {
    for v in values() {
        assert_eq!(fe(&v).to_be_bytes(), v);
    }
    let p = bytes_of(modulus().as_ref());
    assert!(Fe::from_be_bytes(&p).is_none());
    assert!(Fe::from_be_bytes(&[0xff; 32]).is_none());
    assert_eq!(fe(&bytes_of(&U256::ONE)), ONE);
}

#[test]
fn the_field_agrees_with_generic_modular_arithmetic() {
    let p = modulus();
    let vs = values();
    for a in &vs {
        for b in &vs {
            let (x, y) = (fe(a), fe(b));
            let (ba, bb) = (big(a), big(b));
            assert_eq!(x.mul(&y).to_be_bytes(), bytes_of(&ba.mul_mod(&bb, &p)));
            assert_eq!(x.add(&y).to_be_bytes(), bytes_of(&ba.add_mod(&bb, &p)));
            assert_eq!(x.sub(&y).to_be_bytes(), bytes_of(&ba.sub_mod(&bb, &p)));
        }
        let x = fe(a);
        assert_eq!(x.neg().to_be_bytes(), bytes_of(&big(a).neg_mod(&p)));
        assert_eq!(x.square(), x.mul(&x));
        assert_eq!(x.double(), x.add(&x));
        assert_eq!(x.is_zero(), *a == [0; 32]);
    }
}

/// `x^(p-2)`: the inverse, for reading a point's affine coordinates.
fn invert(x: &Fe) -> Fe {
    let exponent = bytes_of(&modulus().get().wrapping_sub(&U256::from_u64(2)));
    let mut acc = ONE;
    for byte in exponent {
        for bit in (0..8).rev() {
            acc = acc.square();
            if byte >> bit & 1 == 1 {
                acc = acc.mul(x);
            }
        }
    }
    acc
}

/// `point` as `p256`'s affine x and y bytes; none for the identity.
fn affine(point: &Point) -> Option<([u8; 32], [u8; 32])> {
    if point.is_identity() {
        return None;
    }
    let zi = invert(&point.z);
    let zi2 = zi.square();
    Some((
        point.x.mul(&zi2).to_be_bytes(),
        point.y.mul(&zi2.mul(&zi)).to_be_bytes(),
    ))
}

fn theirs(point: &ProjectivePoint) -> Option<([u8; 32], [u8; 32])> {
    let a = point.to_affine();
    Affine::of(&a).map(|_| (a.x().into(), a.y().into()))
}

/// `k·G`, with `p256`, for k = 1.. and some large scalars.
fn points() -> Vec<ProjectivePoint> {
    let mut scalars: Vec<Scalar> = (1u64..8).map(Scalar::from).collect();
    scalars.extend((0u64..8).map(|i| {
        let d: [u8; 32] = Sha256::digest((100 + i).to_be_bytes()).into();
        Scalar::from_repr(d.into()).unwrap_or(Scalar::ONE)
    }));
    scalars.push(-Scalar::ONE);
    scalars
        .iter()
        .map(|k| ProjectivePoint::GENERATOR * k)
        .collect()
}

fn ours(p: &ProjectivePoint) -> Affine {
    Affine::of(&p.to_affine()).expect("not the identity")
}

#[test]
fn sums_and_doublings_agree_with_p256_also_on_equal_and_opposite_points() {
    let ps = points();
    for a in &ps {
        let pa = Point::of(&ours(a));
        assert_eq!(affine(&pa.double()), theirs(&a.double()));
        for b in &ps {
            let want = theirs(&(a + b));
            assert_eq!(affine(&pa.add_affine(&ours(b))), want);
            // A Jacobian operand with Z ≠ 1, as the sums have.
            let pb = Point::of(&ours(b)).double();
            assert_eq!(affine(&pa.add(&pb)), theirs(&(*a + b.double())));
            assert_eq!(affine(&pb.add(&pa)), theirs(&(*a + b.double())));
        }
        // P + P, P - P, and the identity on either side.
        assert_eq!(affine(&pa.add_affine(&ours(a))), theirs(&a.double()));
        assert!(pa.add_affine(&ours(a).neg()).is_identity());
        assert_eq!(
            affine(&pa.double().add(&pa.double())),
            theirs(&a.double().double())
        );
        let minus = Point::of(&ours(&-a.double())).double();
        assert!(pa.double().double().add(&minus).is_identity());
        assert_eq!(affine(&Point::IDENTITY.add_affine(&ours(a))), theirs(a));
        assert_eq!(affine(&Point::IDENTITY.add(&pa)), theirs(a));
        assert_eq!(affine(&pa.add(&Point::IDENTITY)), theirs(a));
        assert!(Point::IDENTITY.double().is_identity());
    }
}

#[test]
fn a_point_has_only_its_own_x_and_the_identity_none() {
    for a in points() {
        let (x, _) = theirs(&a).expect("not the identity");
        let p = Point::of(&ours(&a)).double().add_affine(&ours(&-a));
        assert!(p.has_x(&fe(&x)));
        assert!(!p.has_x(&fe(&x).add(&ONE)));
        assert!(!Point::IDENTITY.has_x(&Fe::ZERO));
    }
    assert!(Affine::of(&p256::AffinePoint::IDENTITY).is_none());
}
