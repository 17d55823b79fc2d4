//! Go durations (`cliflag::parse_duration`, Go's `time.ParseDuration`): every
//! duration flag and environment variable of the binaries (`--resync-period`,
//! `--leader-elect-lease-duration`, `--usage-period`, ...).
//!
//! Checks, for every string that parses: the result is at most Go's maximum
//! (`math.MaxInt64` nanoseconds); it formats back to the same duration both as whole
//! nanoseconds and the way Go's `Duration.String()` writes it (`1h2m3.5s`, `1.5ms`,
//! `500µs`); and writing the string twice adds up (`1m30s` + `1m30s` is 3m exactly,
//! or too large). A refusal names the string it refused.

#![no_main]

use std::time::Duration;

use cliflag::parse_duration;
use libfuzzer_sys::fuzz_target;

const MAX_NANOS: u128 = i64::MAX as u128;

/// `value / 10^digits` with the fraction's trailing zeros (and a bare `.`) left out,
/// as Go's `fmtFrac` writes it.
fn decimal(value: u128, digits: u32) -> String {
    let scale = 10u128.pow(digits);
    let fraction = format!("{:0width$}", value % scale, width = digits as usize);
    let fraction = fraction.trim_end_matches('0');
    if fraction.is_empty() {
        format!("{}", value / scale)
    } else {
        format!("{}.{fraction}", value / scale)
    }
}

/// Go's `time.Duration.String()`.
fn go_string(d: Duration) -> String {
    let nanos = d.as_nanos();
    match nanos {
        0 => "0s".to_string(),
        1..=999 => format!("{nanos}ns"),
        1_000..=999_999 => format!("{}µs", decimal(nanos, 3)),
        1_000_000..=999_999_999 => format!("{}ms", decimal(nanos, 6)),
        _ => {
            let hours = nanos / 3_600_000_000_000;
            let minutes = nanos / 60_000_000_000 % 60;
            let seconds = decimal(nanos % 60_000_000_000, 9);
            match (hours, minutes) {
                (0, 0) => format!("{seconds}s"),
                (0, m) => format!("{m}m{seconds}s"),
                (h, m) => format!("{h}h{m}m{seconds}s"),
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = match parse_duration(input) {
        Ok(d) => d,
        Err(e) => {
            assert_eq!(e.input, input);
            assert!(!e.reason.is_empty());
            return;
        }
    };
    assert!(parsed.as_nanos() <= MAX_NANOS, "{input:?} -> {parsed:?}");
    let nanos = format!("{}ns", parsed.as_nanos());
    assert_eq!(parse_duration(&nanos), Ok(parsed), "{input:?} as {nanos:?}");
    let go = go_string(parsed);
    assert_eq!(parse_duration(&go), Ok(parsed), "{input:?} as {go:?}");

    // Twice the same terms (a sign or a bare "0" cannot be repeated).
    if !input.starts_with(['+', '-']) && input != "0" {
        let twice = format!("{input}{input}");
        match parse_duration(&twice) {
            Ok(d) => assert_eq!(d, parsed * 2, "{twice:?}"),
            Err(e) => {
                assert!(parsed.as_nanos() * 2 > MAX_NANOS, "{twice:?}: {e}");
                assert!(e.reason.contains("too large"), "{twice:?}: {e}");
            }
        }
    }
});
