//! The natural numbers under `inf.Dec`: magnitudes in base-10^9 limbs,
//! with the few operations an amount needs.

use std::cmp::Ordering;

/// A natural number in base-10^9 limbs, least significant first, without
/// trailing zero limbs (zero has none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Mag(Vec<u32>);

/// The limb base.
const LIMB: u64 = 1_000_000_000;

impl Mag {
    pub(super) fn zero() -> Mag {
        Mag(Vec::new())
    }

    pub(super) fn from_u64(mut n: u64) -> Mag {
        let mut limbs = Vec::new();
        while n > 0 {
            limbs.push((n % LIMB) as u32);
            n /= LIMB;
        }
        Mag(limbs)
    }

    /// From ASCII digits.
    pub(super) fn from_decimal(digits: &str) -> Mag {
        let bytes = digits.as_bytes();
        let mut limbs = Vec::with_capacity(bytes.len() / 9 + 1);
        let mut end = bytes.len();
        while end > 0 {
            let start = end.saturating_sub(9);
            let limb = bytes[start..end]
                .iter()
                .fold(0u32, |acc, b| acc * 10 + u32::from(b - b'0'));
            limbs.push(limb);
            end = start;
        }
        let mut mag = Mag(limbs);
        mag.trim();
        mag
    }

    fn trim(&mut self) {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
    }

    pub(super) fn is_zero(&self) -> bool {
        self.0.is_empty()
    }

    /// The number of decimal digits (0 for zero).
    pub(super) fn digits(&self) -> u64 {
        match self.0.last() {
            None => 0,
            Some(top) => (self.0.len() as u64 - 1) * 9 + u64::from(top.ilog10() + 1),
        }
    }

    pub(super) fn to_decimal(&self) -> String {
        let mut limbs = self.0.iter().rev();
        let Some(top) = limbs.next() else {
            return "0".to_owned();
        };
        let mut s = top.to_string();
        for limb in limbs {
            s.push_str(&format!("{limb:09}"));
        }
        s
    }

    pub(super) fn cmp_mag(&self, other: &Mag) -> Ordering {
        self.0
            .len()
            .cmp(&other.0.len())
            .then_with(|| self.0.iter().rev().cmp(other.0.iter().rev()))
    }

    pub(super) fn mul_small(&mut self, m: u32) {
        let mut carry = 0u64;
        for limb in &mut self.0 {
            let v = u64::from(*limb) * u64::from(m) + carry;
            *limb = (v % LIMB) as u32;
            carry = v / LIMB;
        }
        while carry > 0 {
            self.0.push((carry % LIMB) as u32);
            carry /= LIMB;
        }
        self.trim();
    }

    pub(super) fn add_small(&mut self, n: u32) {
        self.add_assign(&Mag::from_u64(u64::from(n)));
    }

    fn add_assign(&mut self, other: &Mag) {
        let mut carry = 0u64;
        for i in 0..self.0.len().max(other.0.len()) {
            if i == self.0.len() {
                self.0.push(0);
            }
            let v = u64::from(self.0[i]) + u64::from(other.0.get(i).copied().unwrap_or(0)) + carry;
            self.0[i] = (v % LIMB) as u32;
            carry = v / LIMB;
        }
        if carry > 0 {
            self.0.push(carry as u32);
        }
    }

    pub(super) fn add(&self, other: &Mag) -> Mag {
        let mut sum = self.clone();
        sum.add_assign(other);
        sum
    }

    /// `self - other`, for `self >= other`.
    pub(super) fn sub(&self, other: &Mag) -> Mag {
        let mut limbs = self.0.clone();
        let mut borrow = 0i64;
        for (i, limb) in limbs.iter_mut().enumerate() {
            let mut v = i64::from(*limb) - i64::from(other.0.get(i).copied().unwrap_or(0)) - borrow;
            borrow = 0;
            if v < 0 {
                v += LIMB as i64;
                borrow = 1;
            }
            *limb = v as u32;
        }
        let mut mag = Mag(limbs);
        mag.trim();
        mag
    }

    /// `self * 10^k`.
    pub(super) fn mul_pow10(&self, k: u64) -> Mag {
        if self.is_zero() {
            return Mag::zero();
        }
        let mut limbs = vec![0u32; (k / 9) as usize];
        limbs.extend_from_slice(&self.0);
        let mut mag = Mag(limbs);
        mag.mul_small(10u32.pow((k % 9) as u32));
        mag
    }

    /// `self / 10^k`, truncated, and whether anything was cut off.
    pub(super) fn div_pow10(&self, k: u64) -> (Mag, bool) {
        let whole = usize::try_from(k / 9).unwrap_or(usize::MAX);
        if whole >= self.0.len() {
            return (Mag::zero(), !self.is_zero());
        }
        let mut inexact = self.0[..whole].iter().any(|&l| l != 0);
        let mut limbs = self.0[whole..].to_vec();
        let divisor = 10u64.pow((k % 9) as u32);
        let mut rem = 0u64;
        for limb in limbs.iter_mut().rev() {
            let v = rem * LIMB + u64::from(*limb);
            *limb = (v / divisor) as u32;
            rem = v % divisor;
        }
        inexact |= rem != 0;
        let mut mag = Mag(limbs);
        mag.trim();
        (mag, inexact)
    }
}
