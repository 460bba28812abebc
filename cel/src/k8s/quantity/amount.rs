//! `resource.Quantity`'s amounts: parsing, comparison, addition and
//! conversion, after `k8s.io/apimachinery/pkg/api/resource` (quantity.go,
//! amount.go, math.go, suffix.go) and the `inf.Dec` it falls back to.
//!
//! An amount is [`Amount::Int`] (`value * 10^scale` in an i64, Go's
//! `int64Amount`) or [`Amount::Dec`] (an arbitrary-precision decimal, Go's
//! `inf.Dec`). The Go code moves from the first to the second when a value
//! does not fit, and callers can tell (`AsInt64` only answers for the
//! first), so the same moves happen here. Comparison and equality are by
//! value. The format (DecimalSI, BinarySI, DecimalExponent) only matters
//! to the canonical string, which the CEL library never shows, and is
//! kept only where it changes the value (the BinarySI cap).
//!
//! Where Go would build numbers of billions of digits (adding `1e2000000000`
//! to `1`), this refuses with an error instead of running out of memory:
//! no result may need more than [`MAX_DIGITS`] digits.

mod mag;
#[cfg(test)]
mod tests;

use mag::Mag;
use std::cmp::Ordering;

/// The most decimal digits an arithmetic result may have.
pub(super) const MAX_DIGITS: u64 = 10_000;

/// The regular expression Go's parse errors quote.
const SPLIT_RE: &str = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$";

/// Why a string is not a quantity: Go's three errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ParseError {
    /// `ErrFormatWrong`.
    Format,
    /// `ErrNumeric`.
    Numeric,
    /// `ErrSuffix`.
    Suffix,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseError::Format => {
                write!(
                    f,
                    "quantities must match the regular expression '{SPLIT_RE}'"
                )
            }
            ParseError::Numeric => f.write_str("unable to parse numeric part of quantity"),
            ParseError::Suffix => f.write_str("unable to parse quantity's suffix"),
        }
    }
}

/// A result that would be too large to compute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TooLarge;

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "quantity arithmetic would need more than {MAX_DIGITS} digits"
        )
    }
}

/// A quantity's amount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Quantity {
    amount: Amount,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Amount {
    /// `value * 10^scale`.
    Int { value: i64, scale: i64 },
    /// An arbitrary-precision decimal.
    Dec(Dec),
}

/// `±mag * 10^exp` (`inf.Dec`, whose scale is `-exp`); zero is never
/// negative. Not normalized: `10 * 10^-1` and `1` are different
/// representations of one value, as in `inf.Dec`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Dec {
    neg: bool,
    mag: Mag,
    exp: i64,
}

/// The suffix formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    DecimalExponent,
    BinarySI,
    DecimalSI,
}

/// What Go's `parseQuantityString` splits a string into.
struct Parts<'a> {
    positive: bool,
    /// The signed number as written, without suffix (`inf.Dec`'s input).
    value: &'a str,
    /// The integer digits, leading zeros stripped, `"0"` if none.
    num: &'a str,
    /// The fraction digits.
    denom: &'a str,
    suffix: &'a str,
}

/// The characters a suffix starts with.
fn is_suffix_byte(b: u8) -> bool {
    b"eEinumkKMGTP".contains(&b)
}

/// Go's `parseQuantityString`, byte for byte.
fn split(s: &str) -> Result<Parts<'_>, ParseError> {
    let b = s.as_bytes();
    let end = b.len();
    let mut positive = true;
    let mut pos = 0;
    let zero = |positive| Parts {
        positive,
        value: "0",
        num: "0",
        denom: "",
        suffix: "",
    };
    match b.first() {
        Some(b'-') => {
            positive = false;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        return Ok(zero(positive));
    }
    let start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos >= end {
        return Ok(Parts {
            positive,
            value: s,
            num: &s[start..],
            denom: "",
            suffix: "",
        });
    }
    let num = if pos == start { "0" } else { &s[start..pos] };
    let mut denom = "";
    if b[pos] == b'.' {
        pos += 1;
        let start = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        if pos >= end {
            return Ok(Parts {
                positive,
                value: s,
                num,
                denom: &s[start..],
                suffix: "",
            });
        }
        denom = &s[start..pos];
    }
    let value = &s[..pos];
    let suffix_start = pos;
    while pos < end && is_suffix_byte(b[pos]) {
        pos += 1;
    }
    if pos < end && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return Err(ParseError::Format);
    }
    Ok(Parts {
        positive,
        value,
        num,
        denom,
        suffix: &s[suffix_start..],
    })
}

/// Go's suffix interpretation: base, exponent and format.
fn interpret(suffix: &str) -> Option<(u32, i32, Format)> {
    let (base, exponent, format) = match suffix {
        "" => (10, 0, Format::DecimalSI),
        "n" => (10, -9, Format::DecimalSI),
        "u" => (10, -6, Format::DecimalSI),
        "m" => (10, -3, Format::DecimalSI),
        "k" => (10, 3, Format::DecimalSI),
        "M" => (10, 6, Format::DecimalSI),
        "G" => (10, 9, Format::DecimalSI),
        "T" => (10, 12, Format::DecimalSI),
        "P" => (10, 15, Format::DecimalSI),
        "E" => (10, 18, Format::DecimalSI),
        "Ki" => (2, 10, Format::BinarySI),
        "Mi" => (2, 20, Format::BinarySI),
        "Gi" => (2, 30, Format::BinarySI),
        "Ti" => (2, 40, Format::BinarySI),
        "Pi" => (2, 50, Format::BinarySI),
        "Ei" => (2, 60, Format::BinarySI),
        s if s.len() > 1 && (s.starts_with('e') || s.starts_with('E')) => {
            // Go truncates the parsed int64 to the int32 exponent.
            let parsed: i64 = s[1..].parse().ok()?;
            (10, parsed as i32, Format::DecimalExponent)
        }
        _ => return None,
    };
    Some((base, exponent, format))
}

/// `base * 10^scale` if it fits in an i64 (Go's `positiveScaleInt64`, for
/// which a non-positive scale changes nothing).
fn positive_scale(base: i64, scale: i64) -> Option<i64> {
    if scale <= 0 || base == 0 {
        return Some(base);
    }
    let mut value = base;
    for _ in 0..scale {
        value = value.checked_mul(10)?;
    }
    Some(value)
}

impl Quantity {
    /// Go's `ParseQuantity`.
    pub(super) fn parse(s: &str) -> Result<Quantity, ParseError> {
        if s.is_empty() {
            return Err(ParseError::Format);
        }
        if s == "0" {
            return Ok(Quantity::int(0, 0));
        }
        let parts = split(s)?;
        let (base, exponent, format) = interpret(parts.suffix).ok_or(ParseError::Suffix)?;
        let digits = (parts.num.len() + parts.denom.len()) as i64;
        let (mut scale, precision, mantissa) = match format {
            Format::DecimalExponent | Format::DecimalSI => (i64::from(exponent), 18 - digits, 1),
            Format::BinarySI if exponent >= 0 && parts.denom.is_empty() => {
                // Go: 15 - len(num) - int32(float32(exponent)*3/10) - 1.
                let approx = (exponent as f32 * 3.0 / 10.0) as i64;
                (
                    0,
                    15 - parts.num.len() as i64 - approx - 1,
                    1i64 << exponent,
                )
            }
            Format::BinarySI => (0, -1, 1),
        };
        if precision >= 0 {
            scale -= parts.denom.len() as i64;
            if scale >= -9 {
                let shifted = format!("{}{}", parts.num, parts.denom);
                let value: i64 = shifted.parse().map_err(|_| ParseError::Numeric)?;
                if let Some(result) = value.checked_mul(mantissa) {
                    let result = if parts.positive { result } else { -result };
                    return Ok(Quantity::int(result, scale));
                }
            }
        }
        let mut dec = Dec::parse(parts.value).ok_or(ParseError::Numeric)?;
        if base == 10 {
            dec.exp += i64::from(exponent);
        } else {
            for _ in 0..exponent / 30 {
                dec.mag.mul_small(1 << 30);
            }
            dec.mag.mul_small(1 << (exponent % 30));
        }
        // Rounded up, away from zero, to a multiple of 10^-9.
        if !dec.mag.is_zero() && dec.exp < -9 {
            let (mut q, inexact) = dec.mag.div_pow10((-9 - dec.exp) as u64);
            if inexact {
                q.add_small(1);
            }
            dec.mag = q;
            dec.exp = -9;
        }
        // A binary amount is capped at the largest int64.
        if format == Format::BinarySI {
            let max = Dec {
                neg: false,
                mag: Mag::from_u64(i64::MAX as u64),
                exp: 0,
            };
            let magnitude = Dec {
                neg: false,
                ..dec.clone()
            };
            if magnitude.cmp_value(&max) == Ordering::Greater {
                dec.mag = max.mag;
                dec.exp = 0;
            }
        }
        dec.neg = dec.neg && !dec.mag.is_zero();
        Ok(Quantity {
            amount: Amount::Dec(dec),
        })
    }

    fn int(value: i64, scale: i64) -> Quantity {
        Quantity {
            amount: Amount::Int { value, scale },
        }
    }

    /// An int as a quantity (Go's `NewQuantity(n, DecimalExponent)`).
    pub(super) fn from_i64(n: i64) -> Quantity {
        Quantity::int(n, 0)
    }

    /// -1, 0 or 1.
    pub(super) fn sign(&self) -> i64 {
        match &self.amount {
            Amount::Int { value, .. } => value.signum(),
            Amount::Dec(d) if d.mag.is_zero() => 0,
            Amount::Dec(d) => match d.neg {
                true => -1,
                false => 1,
            },
        }
    }

    fn as_dec(&self) -> Dec {
        match &self.amount {
            Amount::Int { value, scale } => Dec {
                neg: *value < 0,
                mag: Mag::from_u64(value.unsigned_abs()),
                exp: *scale,
            },
            Amount::Dec(d) => d.clone(),
        }
    }

    /// The amounts compared by value.
    pub(super) fn cmp(&self, other: &Quantity) -> Ordering {
        self.as_dec().cmp_value(&other.as_dec())
    }

    /// Go's `AsInt64`: only an int64 amount at a non-negative scale that
    /// still fits once scaled.
    pub(super) fn as_i64(&self) -> Option<i64> {
        match self.amount {
            Amount::Int { value, scale: 0 } => Some(value),
            Amount::Int { scale, .. } if scale < 0 => None,
            Amount::Int { value, scale } => positive_scale(value, scale),
            Amount::Dec(_) => None,
        }
    }

    /// Go's `AsApproximateFloat64`: the unscaled value as a float, times
    /// Go's `math.Pow10` of the exponent.
    pub(super) fn as_approximate_f64(&self) -> f64 {
        let (base, exponent) = match &self.amount {
            Amount::Int { value, scale } => (*value as f64, *scale),
            Amount::Dec(d) => {
                let m: f64 = d.mag.to_decimal().parse().unwrap_or(f64::INFINITY);
                (if d.neg { -m } else { m }, d.exp)
            }
        };
        if exponent == 0 {
            return base;
        }
        base * go_pow10(exponent)
    }

    /// Go's `Add`: int64 arithmetic while it fits, else decimal.
    pub(super) fn add(&self, y: &Quantity) -> Result<Quantity, TooLarge> {
        if let (
            Amount::Int {
                value: av,
                scale: ascale,
            },
            Amount::Int {
                value: bv,
                scale: bscale,
            },
        ) = (&self.amount, &y.amount)
        {
            if let Some((value, scale)) = int_add(*av, *ascale, *bv, *bscale) {
                return Ok(Quantity::int(value, scale));
            }
        }
        Ok(Quantity {
            amount: Amount::Dec(self.as_dec().add(&y.as_dec())?),
        })
    }

    /// Go's `Sub`, which negates an int64 amount the way Go does
    /// (wrapping), then adds.
    pub(super) fn sub(&self, y: &Quantity) -> Result<Quantity, TooLarge> {
        if let (
            Amount::Int {
                value: av,
                scale: ascale,
            },
            Amount::Int {
                value: bv,
                scale: bscale,
            },
        ) = (&self.amount, &y.amount)
        {
            if let Some((value, scale)) = int_add(*av, *ascale, bv.wrapping_neg(), *bscale) {
                return Ok(Quantity::int(value, scale));
            }
        }
        let mut negated = y.as_dec();
        negated.neg = !negated.neg && !negated.mag.is_zero();
        Ok(Quantity {
            amount: Amount::Dec(self.as_dec().add(&negated)?),
        })
    }
}

/// Go's `int64Amount.Add`: `None` where it would overflow.
fn int_add(av: i64, ascale: i64, bv: i64, bscale: i64) -> Option<(i64, i64)> {
    if bv == 0 {
        return Some((av, ascale));
    }
    if av == 0 {
        return Some((bv, bscale));
    }
    match ascale.cmp(&bscale) {
        Ordering::Equal => Some((av.checked_add(bv)?, ascale)),
        Ordering::Greater => {
            let c = positive_scale(av, ascale - bscale)?;
            Some((c.checked_add(bv)?, bscale))
        }
        Ordering::Less => {
            let c = positive_scale(bv, bscale - ascale)?;
            Some((av.checked_add(c)?, ascale))
        }
    }
}

/// Go's `math.Pow10`: two table entries multiplied (or divided), which is
/// not always the correctly rounded power.
fn go_pow10(n: i64) -> f64 {
    const TAB: [f64; 32] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23, 1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31,
    ];
    const POS32: [f64; 10] = [
        1e0, 1e32, 1e64, 1e96, 1e128, 1e160, 1e192, 1e224, 1e256, 1e288,
    ];
    const NEG32: [f64; 11] = [
        1e-0, 1e-32, 1e-64, 1e-96, 1e-128, 1e-160, 1e-192, 1e-224, 1e-256, 1e-288, 1e-320,
    ];
    if (0..=308).contains(&n) {
        return POS32[(n / 32) as usize] * TAB[(n % 32) as usize];
    }
    if (-323..=0).contains(&n) {
        let m = -n;
        return NEG32[(m / 32) as usize] / TAB[(m % 32) as usize];
    }
    if n > 0 {
        f64::INFINITY
    } else {
        0.0
    }
}

impl Dec {
    /// `inf.Dec.SetString`: an optional sign, digits with at most one
    /// point, at least one digit.
    fn parse(s: &str) -> Option<Dec> {
        let (neg, body) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            _ => (false, s),
        };
        let (int, frac) = match body.split_once('.') {
            Some((int, frac)) => (int, frac),
            None => (body, ""),
        };
        let digits = format!("{int}{frac}");
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let mag = Mag::from_decimal(&digits);
        Some(Dec {
            neg: neg && !mag.is_zero(),
            mag,
            exp: -(frac.len() as i64),
        })
    }

    /// The values compared, without building powers of ten of the
    /// exponents' difference unless the magnitudes are that close.
    fn cmp_value(&self, other: &Dec) -> Ordering {
        let sign = |d: &Dec| match (d.mag.is_zero(), d.neg) {
            (true, _) => 0,
            (false, true) => -1,
            (false, false) => 1,
        };
        let (sa, sb) = (sign(self), sign(other));
        if sa != sb || sa == 0 {
            return sa.cmp(&sb);
        }
        let magnitude = {
            // Each value lies in [10^(order-1), 10^order).
            let oa = self.mag.digits() as i64 + self.exp;
            let ob = other.mag.digits() as i64 + other.exp;
            if oa != ob {
                oa.cmp(&ob)
            } else {
                // The exponents differ by at most the digit counts' difference.
                let e = self.exp.min(other.exp);
                let a = self.mag.mul_pow10((self.exp - e) as u64);
                let b = other.mag.mul_pow10((other.exp - e) as u64);
                a.cmp_mag(&b)
            }
        };
        if sa < 0 {
            magnitude.reverse()
        } else {
            magnitude
        }
    }

    /// The exact sum, at the smaller exponent (`inf.Dec.Add`).
    fn add(&self, other: &Dec) -> Result<Dec, TooLarge> {
        let e = self.exp.min(other.exp);
        let shift = |d: &Dec| -> Result<Mag, TooLarge> {
            let by = (d.exp - e) as u64;
            if d.mag.is_zero() {
                return Ok(Mag::zero());
            }
            if (d.mag.digits()).saturating_add(by) > MAX_DIGITS {
                return Err(TooLarge);
            }
            Ok(d.mag.mul_pow10(by))
        };
        let (a, b) = (shift(self)?, shift(other)?);
        let (neg, mag) = if self.neg == other.neg {
            (self.neg, a.add(&b))
        } else {
            match a.cmp_mag(&b) {
                Ordering::Less => (other.neg, b.sub(&a)),
                _ => (self.neg, a.sub(&b)),
            }
        };
        Ok(Dec {
            neg: neg && !mag.is_zero(),
            mag,
            exp: e,
        })
    }
}
