//! Quantity parsing: the grammar of apimachinery's `ParseQuantity`, rounded up.

use apis::cloudnative::v1alpha1::{ParsedResource, VirtualMachineResource};
use apis::quantity::{QuantityError, bytes, cpu_cores, parse_ceil};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

const KI: u64 = 1 << 10;
const MI: u64 = 1 << 20;
const GI: u64 = 1 << 30;

#[test]
fn valid_quantities_round_up_to_whole_numbers() {
    let cases: &[(&str, u64)] = &[
        ("0", 0),
        ("-0", 0),
        ("+0.0Gi", 0),
        ("1", 1),
        ("+7", 7),
        ("007", 7),
        ("1.", 1),
        (".5", 1),
        ("0.001", 1),
        ("1.000", 1),
        ("2.0001", 3),
        // Binary suffixes.
        ("1Ki", KI),
        ("64Mi", 64 * MI),
        ("1Gi", GI),
        ("1.5Gi", 3 * GI / 2),
        ("0.5Ki", 512),
        ("0.3Ki", 308), // 307.2 rounds up
        ("1Ti", 1 << 40),
        ("1Pi", 1 << 50),
        ("15Ei", 15 << 60),
        // Decimal suffixes.
        ("1500m", 2),
        ("1000m", 1),
        ("1m", 1),
        ("999m", 1),
        ("2k", 2_000),
        ("3M", 3_000_000),
        ("4G", 4_000_000_000),
        ("5T", 5_000_000_000_000),
        ("6P", 6_000_000_000_000_000),
        ("7E", 7_000_000_000_000_000_000),
        ("1E", 1_000_000_000_000_000_000),
        // Decimal exponents.
        ("1e3", 1_000),
        ("1E3", 1_000),
        ("1.5e3", 1_500),
        ("2e+2", 200),
        ("25e-1", 3),
        ("1e-3", 1),
        ("1e0", 1),
        ("1e-2147483648", 1),
        ("0e999999", 0),
        // The largest u64, in several spellings.
        ("18446744073709551615", u64::MAX),
        ("18446744073709551614.5", u64::MAX),
        ("0.018446744073709551615e21", u64::MAX),
        ("15.999999999999999999Ei", u64::MAX),
    ];
    for &(input, want) in cases {
        assert_eq!(parse_ceil(input), Ok(want), "parse_ceil({input:?})");
    }
}

#[test]
fn invalid_quantities_are_rejected_with_the_reason() {
    let invalid = [
        "",
        "abc",
        "1.2.3",
        ".",
        "+",
        "-",
        "1 ",
        " 1",
        "1Kb",
        "1ki",
        "1KI",
        "1e",
        "1e+",
        "1e1.5",
        "1Gi1",
        "0x10",
        "1,5",
        "1_000",
        "Gi",
        "e3",
        "1e99999999999",
        "١",
    ];
    for input in invalid {
        match parse_ceil(input) {
            Err(QuantityError::Invalid { value, .. }) => assert_eq!(value, input),
            other => panic!("parse_ceil({input:?}) = {other:?}, want Invalid"),
        }
    }

    for input in ["-1", "-1Gi", "-0.001", "-1e-9"] {
        assert_eq!(
            parse_ceil(input),
            Err(QuantityError::Negative {
                value: input.to_string()
            }),
            "{input:?}"
        );
    }

    for input in [
        "18446744073709551616",
        "18446744073709551615.1",
        "16Ei",
        "100E",
        "1e20",
        "1e2147483647",
        "99999999999999999999999999999999999999999999",
    ] {
        assert_eq!(
            parse_ceil(input),
            Err(QuantityError::Overflow {
                value: input.to_string(),
                max: u64::MAX
            }),
            "{input:?}"
        );
    }
}

#[test]
fn errors_say_what_is_wrong() {
    let text = parse_ceil("abc").unwrap_err().to_string();
    assert!(
        text.contains("\"abc\"") && text.contains("not a Kubernetes quantity"),
        "{text}"
    );
    let text = parse_ceil("-1Gi").unwrap_err().to_string();
    assert!(text.contains("negative"), "{text}");
}

#[test]
fn cpu_is_whole_cores_in_a_u32() {
    let q = |s: &str| Quantity(s.to_string());
    assert_eq!(cpu_cores(&q("1")), Ok(1));
    assert_eq!(cpu_cores(&q("1500m")), Ok(2));
    assert_eq!(cpu_cores(&q("2")), Ok(2));
    assert_eq!(cpu_cores(&q("4294967295")), Ok(u32::MAX));
    assert_eq!(
        cpu_cores(&q("4294967296")),
        Err(QuantityError::Overflow {
            value: "4294967296".to_string(),
            max: u64::from(u32::MAX)
        })
    );
    assert_eq!(bytes(&q("64Mi")), Ok(64 * MI));
}

#[test]
fn resource_parse_names_the_bad_field() {
    let ok = VirtualMachineResource::new("1500m", "64Mi", "1Gi").parse();
    assert_eq!(
        ok,
        Ok(ParsedResource {
            cpu_cores: 2,
            memory_bytes: 64 * MI,
            root_disk_bytes: GI
        })
    );

    let cases = [
        (
            VirtualMachineResource::new("x", "64Mi", "1Gi"),
            "spec.resource.cpu",
        ),
        (
            VirtualMachineResource::new("1", "-1", "1Gi"),
            "spec.resource.memory",
        ),
        (
            VirtualMachineResource::new("1", "64Mi", "1Gb"),
            "spec.resource.rootDisk",
        ),
    ];
    for (resource, field) in cases {
        let err = resource.parse().unwrap_err();
        assert_eq!(err.field, field);
        assert!(err.to_string().starts_with(field), "{err}");
    }
}

mod properties {
    use apis::quantity::parse_ceil;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn integers_parse_to_themselves(n: u64) {
            prop_assert_eq!(parse_ceil(&n.to_string()), Ok(n));
        }

        #[test]
        fn binary_suffixes_multiply_exactly(n in 0u64..1 << 20, shift in 1usize..=6) {
            let suffix = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][shift - 1];
            let want = u128::from(n) << (10 * shift);
            let got = parse_ceil(&format!("{n}{suffix}"));
            match u64::try_from(want) {
                Ok(want) => prop_assert_eq!(got, Ok(want)),
                Err(_) => prop_assert!(got.is_err()),
            }
        }

        #[test]
        fn milli_values_round_up(n: u64) {
            prop_assert_eq!(parse_ceil(&format!("{n}m")), Ok(n.div_ceil(1000)));
        }

        #[test]
        fn decimal_fractions_round_up(int in 0u64..1 << 40, frac in 0u32..1000) {
            let want = int + u64::from(frac != 0);
            prop_assert_eq!(parse_ceil(&format!("{int}.{frac:03}")), Ok(want));
        }

        #[test]
        fn never_panics(s in "\\PC{0,24}") {
            let _ = parse_ceil(&s);
        }

        #[test]
        fn near_quantities_never_panic(
            s in "[+-]?[0-9]{0,30}(\\.[0-9]{0,30})?(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|[eE][+-]?[0-9]{1,12})?"
        ) {
            let _ = parse_ceil(&s);
        }
    }
}
