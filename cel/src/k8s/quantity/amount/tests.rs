//! Quantities parsed, compared, added and converted as apimachinery does.

use super::*;

fn q(s: &str) -> Quantity {
    Quantity::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

/// apimachinery's TestQuantityParse table (part): input, expected
/// value as (unscaled, scale), and whether it stays an int64 amount.
#[test]
fn parses_as_apimachinery_does() {
    for (input, value, scale) in [
        ("0", 0, 0),
        ("1Ki", 1024, 0),
        ("3Ei", 3 << 60, 0),
        ("5n", 5, -9),
        ("50k", 5, 4),
        ("1E-3", 1, -3),
        ("100.035k", 100035, 0),
        ("0.0005k", 5, -1),
        ("1.53E12", 153, 10),
        ("3.001n", 4, -9),
        ("0.0000000001", 1, -9),
        ("0.00000012345", 124, -9),
        ("100.035Ki", 10243584, -2),
        ("0.000000000001Ki", 2, -9),
        (".001", 1, -3),
        ("1.", 1, 0),
        ("1.G", 1, 9),
        ("-", 0, 0),
        ("Mi", 0, 0),
    ] {
        assert_eq!(
            q(input).cmp(&Quantity::int(value, scale)),
            Ordering::Equal,
            "{input}"
        );
    }
    let max = Quantity::int(i64::MAX, 0);
    assert_eq!(q("9Ei").cmp(&max), Ordering::Equal);
    assert_eq!(q("9223372036854775807Ki").cmp(&max), Ordering::Equal);
    // Go's `ParseQuantity` error for each.
    use ParseError::{Format, Numeric, Suffix};
    for (bad, want) in [
        ("", Format),
        ("1.1.M", Format),
        ("1+1.0M", Format),
        ("0.1mi", Suffix),
        ("0.1am", Format),
        ("aoeu", Format),
        (".5i", Suffix),
        ("1i", Suffix),
        ("-3.01i", Suffix),
        ("-3.01e-", Suffix),
        (" 1", Format),
        ("1 ", Format),
        // A valid exponent, but no digits for the number.
        ("e-10", Numeric),
        ("1e", Suffix),
        ("10Mo", Format),
    ] {
        assert_eq!(Quantity::parse(bad).err(), Some(want), "{bad:?}");
    }
}

#[test]
fn the_representation_decides_as_int64() {
    assert_eq!(q("50k").as_i64(), Some(50_000));
    assert_eq!(q("1.0").as_i64(), None, "scale -1");
    assert_eq!(q("1.5Gi").as_i64(), None, "a decimal amount");
    assert_eq!(q("1Gi").as_i64(), Some(1 << 30));
    assert_eq!(q("1e19").as_i64(), None, "overflows once scaled");
    assert_eq!(q("9999999999999999999999999999999999999G").as_i64(), None);
    assert_eq!(
        q("-9223372036854775807").as_i64(),
        None,
        "19 digits: decimal"
    );
}

#[test]
fn arithmetic_is_exact_and_moves_to_decimal_on_overflow() {
    let big = q("9223372036854775807");
    let sum = big.add(&q("1")).expect("fits");
    assert_eq!(sum.cmp(&q("9223372036854775808")), Ordering::Equal);
    assert_eq!(sum.as_i64(), None);
    let small = q("50k").add(&Quantity::from_i64(20)).expect("fits");
    assert_eq!(small.as_i64(), Some(50_020));
    let diff = q("50k")
        .add(&Quantity::from_i64(20))
        .and_then(|s| s.sub(&q("100k")));
    assert_eq!(diff.expect("fits").as_i64(), Some(-49_980));
    assert_eq!(
        q("1.5").add(&q("0.5")).expect("fits").as_i64(),
        None,
        "scale -1"
    );
    assert_eq!(
        q("1e2000000000").add(&q("1")).err(),
        Some(TooLarge),
        "too many digits"
    );
    assert_eq!(q("1e2000000000").cmp(&q("1e1999999999")), Ordering::Greater);
    assert_eq!(q("-1e-5").cmp(&q("-2e-5")), Ordering::Greater);
}

#[test]
fn floats_follow_go() {
    assert_eq!(q("50.703k").as_approximate_f64(), 50703.0);
    assert_eq!(q("1m").as_approximate_f64(), 1e-3);
    assert_eq!(q("-1.5Gi").as_approximate_f64(), -1610612736.0);
    assert!(
        q("0e400").as_approximate_f64().is_nan(),
        "0 * Pow10(400) in Go"
    );
    assert_eq!(q("1e400").as_approximate_f64(), f64::INFINITY);
}

/// Strings made of the characters quantities use, parsed and combined
/// every which way: no panic, and parsing agrees with itself.
#[test]
fn arbitrary_strings_do_not_panic() {
    const ALPHABET: &[u8] = b"0123456789.+-eEinumkKMGTP 9";
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut parsed = Vec::new();
    for _ in 0..50_000 {
        let len = (next() % 12) as usize;
        let s: String = (0..len)
            .map(|_| char::from(ALPHABET[(next() % ALPHABET.len() as u64) as usize]))
            .collect();
        if let Ok(q) = Quantity::parse(&s) {
            assert_eq!(q.cmp(&q), Ordering::Equal, "{s:?}");
            let _ = (q.as_i64(), q.as_approximate_f64(), q.sign());
            parsed.push(q);
        }
    }
    for pair in parsed.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert_eq!(a.cmp(b), b.cmp(a).reverse());
        if let (Ok(sum), Ok(diff)) = (a.add(b), a.sub(b)) {
            // (a + b) - b == a, and (a - b) + b == a, when both fit.
            if let (Ok(back), Ok(forth)) = (sum.sub(b), diff.add(b)) {
                assert_eq!(back.cmp(a), Ordering::Equal);
                assert_eq!(forth.cmp(a), Ordering::Equal);
            }
        }
    }
    assert!(parsed.len() > 1000, "the generator makes quantities too");
}

#[test]
fn big_naturals() {
    let m = Mag::from_decimal("123456789012345678901234567890");
    assert_eq!(m.to_decimal(), "123456789012345678901234567890");
    assert_eq!(m.digits(), 30);
    assert_eq!(
        m.mul_pow10(11).to_decimal(),
        "12345678901234567890123456789000000000000"
    );
    let (d, inexact) = m.div_pow10(20);
    assert_eq!((d.to_decimal(), inexact), ("1234567890".to_owned(), true));
    assert_eq!(m.sub(&m), Mag::zero());
    assert_eq!(Mag::from_decimal("000").to_decimal(), "0");
}
