//! Durations written the way Go's `time.ParseDuration` reads them (`15s`, `1m30s`,
//! `500ms`, `1.5h`), so the flags and environment variables of a Rust controller
//! accept exactly what a Go controller's `--leader-elect-lease-duration` does.
//!
//! The grammar: an optional `+`, then one or more `<number><unit>` pairs, where a
//! number is decimal with an optional fraction (`1`, `1.5`, `.5`) and a unit is one of
//! `ns`, `us` (or `µs`, `μs`), `ms`, `s`, `m`, `h`. A bare `0` is allowed without a
//! unit. Unlike Go, negative durations are rejected (none of our settings can be
//! negative), and so is anything above Go's maximum (about 292 years).

use std::time::Duration;

/// A duration string that [`parse_duration`] does not accept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {input:?}: {reason} (examples: \"15s\", \"1m30s\", \"500ms\")")]
pub struct ParseDurationError {
    /// The string as given.
    pub input: String,
    /// What is wrong with it.
    pub reason: String,
}

const NANOS_PER_UNIT: [(&str, u128); 9] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
    ("", 0),
];

/// Go's largest duration, `math.MaxInt64` nanoseconds.
const MAX_NANOS: u128 = i64::MAX as u128;

/// Parses a Go-style duration (see the [module docs](self)).
///
/// ```
/// use std::time::Duration;
/// use cliflag::parse_duration;
///
/// assert_eq!(parse_duration("15s").unwrap(), Duration::from_secs(15));
/// assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
/// assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
/// assert_eq!(parse_duration("1.5h").unwrap(), Duration::from_secs(5400));
/// assert!(parse_duration("15").unwrap_err().to_string().contains("missing unit"));
/// ```
pub fn parse_duration(input: &str) -> Result<Duration, ParseDurationError> {
    let error = |reason: String| ParseDurationError {
        input: input.to_string(),
        reason,
    };
    let mut rest = input;
    if let Some(stripped) = rest.strip_prefix('-') {
        if stripped.chars().all(|c| c == '0' || c == '.') && !stripped.is_empty() {
            // "-0" is zero in Go; fall through with the sign removed.
            rest = stripped;
        } else {
            return Err(error("negative durations are not allowed".into()));
        }
    } else if let Some(stripped) = rest.strip_prefix('+') {
        rest = stripped;
    }
    if rest == "0" {
        return Ok(Duration::ZERO);
    }
    if rest.is_empty() {
        return Err(error("empty duration".into()));
    }

    let mut total: u128 = 0;
    while !rest.is_empty() {
        // The number: integer digits, then an optional fraction.
        let int_len = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (int_digits, after_int) = rest.split_at(int_len);
        let (frac_digits, after_number) = match after_int.strip_prefix('.') {
            Some(after_dot) => {
                let frac_len = after_dot
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(after_dot.len());
                after_dot.split_at(frac_len)
            }
            None => ("", after_int),
        };
        if int_digits.is_empty() && frac_digits.is_empty() {
            return Err(error(format!("expected a number at {rest:?}")));
        }
        // The unit: everything up to the next digit or dot.
        let unit_len = after_number
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after_number.len());
        let (unit, after_unit) = after_number.split_at(unit_len);
        if unit.is_empty() {
            return Err(error(format!(
                "missing unit after {:?} (use ns, us, ms, s, m or h)",
                &rest[..rest.len() - after_number.len()]
            )));
        }
        let Some(&(_, per_unit)) = NANOS_PER_UNIT.iter().find(|(name, _)| *name == unit) else {
            return Err(error(format!(
                "unknown unit {unit:?} (use ns, us, ms, s, m or h)"
            )));
        };

        let too_large = || error("too large (the maximum is about 292 years)".into());
        let int_value: u128 = if int_digits.is_empty() {
            0
        } else {
            int_digits.parse().map_err(|_| too_large())?
        };
        // Fractions finer than a nanosecond of an hour cannot matter: 18 digits do.
        let frac_digits = &frac_digits[..frac_digits.len().min(18)];
        let frac_value: u128 = if frac_digits.is_empty() {
            0
        } else {
            frac_digits.parse().map_err(|_| too_large())?
        };
        let scale = 10u128.pow(u32::try_from(frac_digits.len()).unwrap_or(18));
        let nanos = int_value
            .checked_mul(per_unit)
            .and_then(|n| n.checked_add(frac_value * per_unit / scale))
            .ok_or_else(too_large)?;
        total = total.checked_add(nanos).ok_or_else(too_large)?;
        if total > MAX_NANOS {
            return Err(too_large());
        }
        rest = after_unit;
    }
    let secs = u64::try_from(total / 1_000_000_000).map_err(|_| error("too large".into()))?;
    let nanos = u32::try_from(total % 1_000_000_000).map_err(|_| error("too large".into()))?;
    Ok(Duration::new(secs, nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_go_parses() {
        let cases = [
            ("15s", Duration::from_secs(15)),
            ("1m30s", Duration::from_secs(90)),
            ("500ms", Duration::from_millis(500)),
            ("1h", Duration::from_secs(3600)),
            ("1.5h", Duration::from_secs(5400)),
            (".5s", Duration::from_millis(500)),
            ("1.s", Duration::from_secs(1)),
            ("+2s", Duration::from_secs(2)),
            ("0", Duration::ZERO),
            ("-0", Duration::ZERO),
            ("0s", Duration::ZERO),
            ("10us", Duration::from_micros(10)),
            ("10µs", Duration::from_micros(10)),
            ("10μs", Duration::from_micros(10)),
            ("7ns", Duration::from_nanos(7)),
            ("1h2m3s4ms5us6ns", Duration::new(3723, 4_005_006)),
            ("0.000000001s", Duration::from_nanos(1)),
            ("2562047h", Duration::from_secs(2562047 * 3600)),
        ];
        for (input, want) in cases {
            assert_eq!(parse_duration(input), Ok(want), "{input}");
        }
    }

    #[test]
    fn rejects_what_go_rejects_with_a_reason() {
        let cases = [
            ("", "empty duration"),
            ("15", "missing unit"),
            ("1m30", "missing unit"),
            ("s", "expected a number"),
            (".s", "expected a number"),
            ("3x", "unknown unit \"x\""),
            ("3 s", "unknown unit \" s\""),
            ("-1s", "negative"),
            ("3000000h", "too large"),
            ("99999999999999999999999999999999999999999s", "too large"),
        ];
        for (input, want) in cases {
            let err = parse_duration(input).expect_err(input);
            assert!(err.to_string().contains(want), "{input}: {err}");
            assert_eq!(err.input, input);
        }
    }
}
