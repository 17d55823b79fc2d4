//! Reading Kubernetes quantities (`"1500m"`, `"64Mi"`, `"1e3"`) as whole numbers:
//! the part of apimachinery's `resource.Quantity` a controller needs.
//!
//! In Go a controller calls `q.Value()` (the quantity rounded **up** to an
//! integer) or `q.MilliValue()`. k8s-openapi's
//! [`Quantity`] is
//! only the string, so this module parses it. It follows the grammar of
//! `resource.ParseQuantity`:
//!
//! ```text
//! quantity  ::= [+|-] number [suffix]
//! number    ::= digits | digits "." digits | digits "." | "." digits
//! suffix    ::= Ki | Mi | Gi | Ti | Pi | Ei          (powers of 1024)
//!             | m | k | M | G | T | P | E            (powers of 1000; "" is 1)
//!             | (e | E) [+|-] digits                 (a power of ten)
//! ```
//!
//! # Why whole numbers, rounded up
//!
//! The values feed a VM driver that speaks whole CPUs and bytes. Rounding up
//! (like Go's `Value()`) never gives a VM *less* than was asked for:
//! `"1500m"` CPUs is 2 CPUs, `"0.5"` bytes is 1 byte.
//!
//! # Exact arithmetic, bounded work
//!
//! The number is kept as decimal digits, so `"1.5Gi"` is exactly 1610612736
//! and nothing is lost to floating point. Any value whose integer part cannot
//! fit in a `u64` is rejected before any big arithmetic is attempted, so the
//! work is linear in the length of the string whatever exponent it carries.
//!
//! ```
//! use apis::quantity::{parse_ceil, QuantityError};
//!
//! assert_eq!(parse_ceil("64Mi"), Ok(64 * 1024 * 1024));
//! assert_eq!(parse_ceil("1500m"), Ok(2));
//! assert_eq!(parse_ceil("1e3"), Ok(1000));
//! assert!(matches!(parse_ceil("-1Gi"), Err(QuantityError::Negative { .. })));
//! assert!(matches!(parse_ceil("abc"), Err(QuantityError::Invalid { .. })));
//! ```

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// Why a string is not a usable quantity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// The string does not follow the quantity grammar.
    #[error("{value:?} is not a Kubernetes quantity: {reason}")]
    Invalid {
        /// The offending string.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The quantity is below zero.
    #[error("{value:?} is negative")]
    Negative {
        /// The offending string.
        value: String,
    },
    /// The quantity, rounded up, is larger than the target type holds.
    #[error("{value:?} is too large (the maximum is {max})")]
    Overflow {
        /// The offending string.
        value: String,
        /// The largest value the target accepts.
        max: u64,
    },
}

/// Parse `value` and round it **up** to a whole number (Go's `Quantity.Value()`
/// for non-negative quantities).
///
/// Zero is accepted (`"0"`, `"0Gi"`, `"-0"`); whether zero makes sense is the
/// caller's decision.
pub fn parse_ceil(value: &str) -> Result<u64, QuantityError> {
    let parsed = Parsed::parse(value)?;
    if parsed.negative && !parsed.is_zero() {
        return Err(QuantityError::Negative {
            value: value.to_string(),
        });
    }
    parsed.ceil().ok_or_else(|| QuantityError::Overflow {
        value: value.to_string(),
        max: u64::MAX,
    })
}

/// A CPU quantity as whole cores, rounding up (`"1500m"` -> 2, `"2"` -> 2).
pub fn cpu_cores(quantity: &Quantity) -> Result<u32, QuantityError> {
    let value = parse_ceil(&quantity.0)?;
    u32::try_from(value).map_err(|_| QuantityError::Overflow {
        value: quantity.0.clone(),
        max: u64::from(u32::MAX),
    })
}

/// A memory or disk quantity in bytes, rounding up (`"64Mi"` -> 67108864).
pub fn bytes(quantity: &Quantity) -> Result<u64, QuantityError> {
    parse_ceil(&quantity.0)
}

/// The most decimal digits a `u64` has (18446744073709551615).
const U64_DIGITS: usize = 20;

/// A parsed quantity: `digits * 10^exponent * 2^binary_exponent`, with
/// `digits` free of leading and trailing zeros (empty for zero).
#[derive(Debug)]
struct Parsed {
    negative: bool,
    digits: Vec<u8>,
    exponent: i64,
    binary_exponent: u32,
}

impl Parsed {
    fn parse(value: &str) -> Result<Self, QuantityError> {
        let invalid = |reason| QuantityError::Invalid {
            value: value.to_string(),
            reason,
        };
        let bytes = value.as_bytes();
        let mut i = 0;
        let negative = match bytes.first() {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            Some(_) => false,
            None => return Err(invalid("it is empty")),
        };

        let int_start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        let int_part = &bytes[int_start..i];
        let mut frac_part: &[u8] = &[];
        if i < bytes.len() && bytes[i] == b'.' {
            i += 1;
            let frac_start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            frac_part = &bytes[frac_start..i];
        }
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(invalid("it has no digits before the suffix"));
        }

        let (exponent, binary_exponent) =
            parse_suffix(&value[i..]).ok_or_else(|| invalid("unknown suffix"))?;

        // digits = int_part ++ frac_part; the point moves left by frac_part.len().
        let mut digits: Vec<u8> = int_part
            .iter()
            .chain(frac_part)
            .map(|d| d - b'0')
            .skip_while(|&d| d == 0)
            .collect();
        let mut exponent = exponent - frac_part.len() as i64;
        while digits.last() == Some(&0) {
            digits.pop();
            exponent += 1;
        }
        Ok(Self {
            negative,
            digits,
            exponent,
            binary_exponent,
        })
    }

    fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    /// The value rounded up to an integer, or `None` if that exceeds `u64`.
    fn ceil(&self) -> Option<u64> {
        if self.is_zero() {
            return Some(0);
        }
        // Fixed point: `int_len` integer digits, then fraction digits.
        let len = self.digits.len() as i64;
        let (mut number, int_len) = if self.exponent >= 0 {
            // An integer of len + exponent digits (no leading zero): more than
            // 20 digits is at least 10^20 > u64::MAX, before any doubling.
            if len + self.exponent > U64_DIGITS as i64 {
                return None;
            }
            let mut number = self.digits.clone();
            number.resize((len + self.exponent) as usize, 0);
            (number, number_len(len + self.exponent))
        } else {
            let fraction_len = -self.exponent;
            if fraction_len >= len + U64_DIGITS as i64 {
                // Below 10^-20 before doubling, below 10^-20 * 2^60 < 1 after:
                // a positive value smaller than one rounds up to one.
                return Some(1);
            }
            let int_len = (len - fraction_len).max(0);
            let mut number = vec![0; (fraction_len - len).max(0) as usize];
            number.extend_from_slice(&self.digits);
            (number, number_len(int_len))
        };
        if int_len > U64_DIGITS {
            return None;
        }

        // Multiply by 2^binary_exponent. Doubling a decimal fraction never
        // adds fraction digits; carries grow the integer part at the front.
        let mut int_len = int_len;
        for _ in 0..self.binary_exponent {
            if double(&mut number) {
                number.insert(0, 1);
                int_len += 1;
            }
            if int_len > U64_DIGITS {
                return None;
            }
        }

        let (int_digits, fraction) = number.split_at(int_len);
        let mut value: u64 = 0;
        for &d in int_digits {
            value = value.checked_mul(10)?.checked_add(u64::from(d))?;
        }
        if fraction.iter().any(|&d| d != 0) {
            value = value.checked_add(1)?;
        }
        Some(value)
    }
}

/// A non-negative digit count as `usize` (callers have bounded it).
fn number_len(len: i64) -> usize {
    usize::try_from(len).unwrap_or(usize::MAX)
}

/// Double a big-endian decimal digit vector in place; returns the carry out.
fn double(digits: &mut [u8]) -> bool {
    let mut carry = 0;
    for d in digits.iter_mut().rev() {
        let v = *d * 2 + carry;
        *d = v % 10;
        carry = v / 10;
    }
    carry == 1
}

/// `(decimal exponent, binary exponent)` of a suffix, or `None` if unknown.
fn parse_suffix(suffix: &str) -> Option<(i64, u32)> {
    Some(match suffix {
        "" => (0, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        _ => {
            // A decimal exponent: e/E, an optional sign, digits (Go parses it
            // as a 32-bit integer).
            let rest = suffix.strip_prefix(['e', 'E'])?;
            let digits = rest.strip_prefix(['+', '-']).unwrap_or(rest);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            (i64::from(rest.parse::<i32>().ok()?), 0)
        }
    })
}
