//! Quantities (`apis::quantity`, apimachinery's `resource.ParseQuantity` followed by
//! `Value()`): a VirtualMachine's `cpu`, `memory` and `rootDisk`, read by the
//! controller and its admission webhook from objects anyone with write access made.
//!
//! Checks `parse_ceil` against exact arithmetic on big integers (num-bigint): the same
//! grammar, but the value computed as a fraction and rounded up, so the verdict
//! (invalid, negative, too large, or the exact rounded-up value) must agree. A value
//! that parses formats back (as a plain integer) to itself, and `cpu_cores` and
//! `bytes` agree with `parse_ceil`.

#![no_main]

use apis::quantity::{QuantityError, bytes, cpu_cores, parse_ceil};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use libfuzzer_sys::fuzz_target;
use num_bigint::BigUint;

#[derive(Debug, PartialEq)]
enum Verdict {
    Invalid,
    Negative,
    Overflow,
    Value(u64),
}

fn digits(s: &str) -> usize {
    s.bytes().take_while(u8::is_ascii_digit).count()
}

/// `(power of ten, power of two)` of a suffix, per the grammar in apis::quantity.
fn suffix(s: &str) -> Option<(i64, u32)> {
    let table = [
        ("", 0, 0),
        ("Ki", 0, 10),
        ("Mi", 0, 20),
        ("Gi", 0, 30),
        ("Ti", 0, 40),
        ("Pi", 0, 50),
        ("Ei", 0, 60),
        ("m", -3, 0),
        ("k", 3, 0),
        ("M", 6, 0),
        ("G", 9, 0),
        ("T", 12, 0),
        ("P", 15, 0),
        ("E", 18, 0),
    ];
    if let Some(&(_, ten, two)) = table.iter().find(|(name, _, _)| *name == s) {
        return Some((ten, two));
    }
    let exponent = s.strip_prefix('e').or_else(|| s.strip_prefix('E'))?;
    let unsigned = exponent
        .strip_prefix('+')
        .or_else(|| exponent.strip_prefix('-'))
        .unwrap_or(exponent);
    if unsigned.is_empty() || digits(unsigned) != unsigned.len() {
        return None;
    }
    // A 32-bit exponent, as Go's parser reads it.
    let value: i64 = match exponent.strip_prefix('-') {
        Some(_) => -(unsigned.parse::<i64>().ok()?),
        None => unsigned.parse::<i64>().ok()?,
    };
    i32::try_from(value).ok().map(|v| (i64::from(v), 0))
}

fn oracle(s: &str) -> Verdict {
    let (negative, rest) = match s.as_bytes().first() {
        None => return Verdict::Invalid,
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        Some(_) => (false, s),
    };
    let (int, after) = rest.split_at(digits(rest));
    let (frac, suffix_text) = match after.strip_prefix('.') {
        Some(after_dot) => after_dot.split_at(digits(after_dot)),
        None => ("", after),
    };
    if int.is_empty() && frac.is_empty() {
        return Verdict::Invalid;
    }
    let Some((ten, two)) = suffix(suffix_text) else {
        return Verdict::Invalid;
    };
    let number = format!("{int}{frac}");
    let n = BigUint::parse_bytes(number.as_bytes(), 10).expect("digits");
    if n == BigUint::from(0u8) {
        return Verdict::Value(0);
    }
    if negative {
        return Verdict::Negative;
    }
    let max = BigUint::from(u64::MAX);
    let ten_power = ten - frac.len() as i64;
    let value = if ten_power >= 0 {
        // n >= 1, so 10^41 or more: far above u64::MAX.
        if ten_power > 40 {
            return Verdict::Overflow;
        }
        (n * BigUint::from(10u8).pow(ten_power as u32)) << two
    } else {
        let divisor_digits = -ten_power;
        // n < 10^len, so the value is below 10^-40 * 2^60 < 1: it rounds up to 1.
        if divisor_digits > number.len() as i64 + 40 {
            return Verdict::Value(1);
        }
        let numerator = n << two;
        let denominator = BigUint::from(10u8).pow(divisor_digits as u32);
        (numerator + &denominator - 1u8) / denominator
    };
    if value > max {
        Verdict::Overflow
    } else {
        Verdict::Value(u64::try_from(value).expect("at most u64::MAX"))
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = parse_ceil(text);
    let verdict = match &parsed {
        Ok(v) => Verdict::Value(*v),
        Err(QuantityError::Invalid { .. }) => Verdict::Invalid,
        Err(QuantityError::Negative { .. }) => Verdict::Negative,
        Err(QuantityError::Overflow { .. }) => Verdict::Overflow,
    };
    assert_eq!(verdict, oracle(text), "{text:?}");

    let quantity = Quantity(text.to_string());
    assert_eq!(bytes(&quantity), parsed);
    match (cpu_cores(&quantity), &parsed) {
        (Ok(cores), Ok(v)) => assert_eq!(u64::from(cores), *v),
        (Err(QuantityError::Overflow { max, .. }), Ok(v)) => {
            assert!(*v > u64::from(u32::MAX) && max == u64::from(u32::MAX))
        }
        (Err(e), Err(want)) => assert_eq!(&e, want),
        (got, want) => panic!("{text:?}: cpu_cores {got:?}, parse_ceil {want:?}"),
    }
    if let Ok(v) = parsed {
        assert_eq!(parse_ceil(&v.to_string()), Ok(v), "{text:?}");
    }
});
