//! Label selectors: what parses (and to which canonical form), what does not (and
//! why), what matches, and that no input makes the parser panic.

use std::collections::BTreeMap;

use cache::{Error, Selector};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use kube::api::ObjectMeta;
use proptest::prelude::*;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Valid selectors and their canonical `Display` (requirements sorted by key,
/// values sorted and deduplicated, apimachinery's spacing).
const VALID: &[(&str, &str)] = &[
    ("", ""),
    ("   ", ""),
    ("a=b", "a=b"),
    ("a==b", "a==b"),
    ("a!=b", "a!=b"),
    ("a=", "a="),
    ("a!=", "a!="),
    ("a", "a"),
    ("!a", "!a"),
    ("a in (x,y)", "a in (x,y)"),
    ("a in (y, x, y)", "a in (x,y)"),
    ("a notin (x)", "a notin (x)"),
    ("a in ()", "a in ()"),
    ("a in (x,)", "a in (,x)"),
    ("a>1", "a>1"),
    ("a<10", "a<10"),
    ("  b = c ,  a  ", "a,b=c"),
    (
        "z=1,y!=2,x in (3),w notin (4),!v,u",
        "u,!v,w notin (4),x in (3),y!=2,z=1",
    ),
    ("app.kubernetes.io/name=foo", "app.kubernetes.io/name=foo"),
    ("example.com/a-b_c.d=E-f_G.h", "example.com/a-b_c.d=E-f_G.h"),
    ("in=notin", "in=notin"),
    ("a in (in,notin)", "a in (in,notin)"),
    ("\ta\n=\rb", "a=b"),
];

#[test]
fn valid_selectors_parse_to_their_canonical_form() {
    for (input, canonical) in VALID {
        let selector = Selector::parse(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
        assert_eq!(selector.to_string(), *canonical, "display of {input:?}");
        // The canonical form parses back to the same selector.
        let again: Selector = canonical.parse().unwrap();
        assert_eq!(again, selector, "round trip of {input:?}");
        assert_eq!(selector.is_empty(), canonical.is_empty(), "{input:?}");
    }
}

/// Invalid selectors and a piece of the reason each must give.
const INVALID: &[(&str, &str)] = &[
    (
        "a in (x",
        "expected ',' or ')' after a value, found the end of the selector at position 7",
    ),
    (
        "a in (x y)",
        "expected ',' or ')' after a value, found \"y\" at position 8",
    ),
    ("a in x", "expected '(' after in/notin"),
    ("a notin", "expected '(' after in/notin"),
    (
        "a in (x=)",
        "expected ',' or ')' after a value, found '=' at position 7",
    ),
    ("a in ((x))", "in the value list, found '(' at position 6"),
    ("a=b,", "expected a requirement after ',' at position 3"),
    (",a=b", "expected a label key, found ',' at position 0"),
    ("a=b,,c", "expected a label key, found ','"),
    ("=b", "expected a label key, found '='"),
    ("!", "expected a label key, found the end"),
    ("!a=b", "expected ',' or the end, found '='"),
    ("a b", "expected an operator"),
    ("a=b=c", "expected ',' or the end, found '='"),
    ("a=(b)", "expected a value, found '('"),
    ("a>", "expected a value, found the end"),
    ("a>b", "must be an integer"),
    ("a<1.5", "must be an integer"),
    ("a>-1", "invalid label value \"-1\""),
    ("a=b c", "expected ',' or the end, found \"c\""),
    ("a=-b", "invalid label value \"-b\""),
    ("a=b_", "invalid label value"),
    ("a=ü", "invalid label value"),
    ("-a=b", "invalid label key \"-a\""),
    ("a/b/c=d", "at most one '/'"),
    ("/a=b", "prefix must be a DNS-1123 subdomain"),
    ("Example.com/a=b", "prefix must be a DNS-1123 subdomain"),
    ("example.com/=b", "name part must not be empty"),
    ("a)", "expected an operator"),
];

#[test]
fn invalid_selectors_say_what_and_where() {
    for (input, reason_part) in INVALID {
        match Selector::parse(input) {
            Err(Error::InvalidSelector { selector, reason }) => {
                assert_eq!(selector, *input);
                assert!(
                    reason.contains(reason_part),
                    "{input:?}: reason {reason:?} lacks {reason_part:?}"
                );
            }
            other => panic!("{input:?}: expected InvalidSelector, got {other:?}"),
        }
    }
}

#[test]
fn length_limits() {
    let name63 = "a".repeat(63);
    let name64 = "a".repeat(64);
    assert!(Selector::parse(&format!("{name63}={name63}")).is_ok());
    assert!(Selector::parse(&format!("{name64}=b")).is_err());
    assert!(Selector::parse(&format!("a={name64}")).is_err());
    // A 253-character prefix is fine, 254 is not.
    let prefix = |len: usize| {
        let mut p = "a.".repeat(len / 2);
        p.truncate(len - 1);
        p.push('b');
        p
    };
    assert_eq!(prefix(253).len(), 253);
    assert!(Selector::parse(&format!("{}/x", prefix(253))).is_ok());
    assert!(Selector::parse(&format!("{}/x", prefix(254))).is_err());
}

#[test]
fn matching_semantics() {
    let l = labels(&[
        ("app", "foo"),
        ("tier", "web"),
        ("replicas", "3"),
        ("empty", ""),
    ]);
    let cases: &[(&str, bool)] = &[
        ("", true),
        ("app=foo", true),
        ("app==foo", true),
        ("app=bar", false),
        ("missing=x", false),
        ("app!=bar", true),
        ("app!=foo", false),
        // != and notin match when the key is absent, as in apimachinery.
        ("missing!=x", true),
        ("missing notin (x)", true),
        ("tier in (web,api)", true),
        ("tier in (api)", false),
        ("missing in (x)", false),
        ("tier notin (web)", false),
        ("tier notin (api)", true),
        ("app", true),
        ("missing", false),
        ("!missing", true),
        ("!app", false),
        ("replicas>2", true),
        ("replicas>3", false),
        ("replicas<4", true),
        ("replicas<3", false),
        ("app>1", false),     // not an integer: no match
        ("missing<9", false), // absent: no match
        ("empty=", true),
        ("empty in ()", true),
        ("app in ()", false),
        ("app=foo,tier=web", true),
        ("app=foo,tier=api", false),
    ];
    for (selector, want) in cases {
        let s = Selector::parse(selector).unwrap();
        assert_eq!(s.matches(&l), *want, "{selector:?}");
    }
}

#[test]
fn matches_objects_with_and_without_labels() {
    let mut cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("x".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let app = Selector::parse("app=foo").unwrap();
    let not_app = Selector::parse("!app").unwrap();
    assert!(!app.matches_object(&cm));
    assert!(not_app.matches_object(&cm));
    assert!(Selector::everything().matches_object(&cm));
    cm.metadata.labels = Some(labels(&[("app", "foo")]));
    assert!(app.matches_object(&cm));
    assert!(!not_app.matches_object(&cm));
}

fn expr(key: &str, op: &str, values: Option<&[&str]>) -> LabelSelectorRequirement {
    LabelSelectorRequirement {
        key: key.into(),
        operator: op.into(),
        values: values.map(|v| v.iter().map(|s| s.to_string()).collect()),
    }
}

#[test]
fn from_label_selector_like_apimachinery() {
    let ls = LabelSelector {
        match_labels: Some([("app".to_string(), "foo".to_string())].into()),
        match_expressions: Some(vec![
            expr("tier", "In", Some(&["web", "api"])),
            expr("env", "NotIn", Some(&["prod"])),
            expr("owner", "Exists", None),
            expr("legacy", "DoesNotExist", Some(&[])),
        ]),
    };
    let s = Selector::from_label_selector(&ls).unwrap();
    assert_eq!(
        s.to_string(),
        "app=foo,env notin (prod),!legacy,owner,tier in (api,web)"
    );
    assert_eq!(Selector::parse(&s.to_string()).unwrap(), s);
    assert!(s.matches(&labels(&[("app", "foo"), ("tier", "web"), ("owner", "me")])));
    assert!(!s.matches(&labels(&[("app", "foo"), ("tier", "web")])));

    assert!(
        Selector::from_label_selector(&LabelSelector::default())
            .unwrap()
            .is_empty()
    );

    for bad in [
        expr("a", "In", None),
        expr("a", "NotIn", Some(&[])),
        expr("a", "Exists", Some(&["x"])),
        expr("a", "Gt", Some(&["1"])),
        expr("-a", "Exists", None),
        expr("a", "In", Some(&["-x"])),
    ] {
        let ls = LabelSelector {
            match_expressions: Some(vec![bad.clone()]),
            ..Default::default()
        };
        assert!(
            matches!(
                Selector::from_label_selector(&ls),
                Err(Error::InvalidSelector { .. })
            ),
            "{bad:?}"
        );
    }
    let bad_label = LabelSelector {
        match_labels: Some([("a".to_string(), "not valid".to_string())].into()),
        ..Default::default()
    };
    assert!(Selector::from_label_selector(&bad_label).is_err());
}

/// A valid requirement in selector syntax.
fn requirement() -> impl Strategy<Value = String> {
    let key = "([a-z0-9]([a-z0-9.-]{0,8}[a-z0-9])?/)?[A-Za-z0-9]([A-Za-z0-9_.-]{0,10}[A-Za-z0-9])?";
    let value = "([A-Za-z0-9]([A-Za-z0-9_.-]{0,10}[A-Za-z0-9])?)?";
    let key = key.prop_filter("no '..' in the prefix", |k| {
        k.split_once('/').is_none_or(|(p, _)| {
            p.split('.')
                .all(|l| !l.is_empty() && !l.ends_with('-') && !l.starts_with('-'))
        })
    });
    (
        key,
        0..9usize,
        prop::collection::vec(value, 1..4),
        any::<i32>(),
    )
        .prop_map(|(k, op, values, n)| match op {
            0 => format!("{k}={}", values[0]),
            1 => format!("{k}=={}", values[0]),
            2 => format!("{k}!={}", values[0]),
            3 => format!("{k} in ({})", values.join(",")),
            4 => format!("{k} notin ({})", values.join(",")),
            5 => k,
            6 => format!("!{k}"),
            7 => format!("{k}>{}", n.unsigned_abs()),
            _ => format!("{k}<{}", n.unsigned_abs()),
        })
}

proptest! {
    #[test]
    fn arbitrary_strings_never_panic(input in any::<String>()) {
        let _ = Selector::parse(&input);
    }

    #[test]
    fn selector_like_strings_never_panic(input in "[a-z!=<>(), /.in-]{0,30}") {
        if let Ok(s) = Selector::parse(&input) {
            prop_assert_eq!(Selector::parse(&s.to_string()).unwrap(), s);
        }
    }

    #[test]
    fn display_round_trips(reqs in prop::collection::vec(requirement(), 0..6)) {
        let input = reqs.join(", ");
        let s = Selector::parse(&input).unwrap();
        let shown = s.to_string();
        prop_assert_eq!(Selector::parse(&shown).unwrap(), s.clone());
        prop_assert_eq!(Selector::parse(&shown).unwrap().to_string(), shown);
    }
}
