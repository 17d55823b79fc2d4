//! Tests of [`super`]: what the subset matches, what it generates, what it refuses.

use super::Pattern;

#[test]
fn patterns_match_and_generate_within_their_subset() {
    for (source, yes, no) in [
        ("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "web-1", "-web"),
        ("^\\d{3}-\\d{2,}$", "123-45", "12-345"),
        ("(foo|bar)baz", "xbarbazx", "foobaxz"),
        ("^[^/]+/[^/]+$", "a/b", "a/b/c"),
        ("^v\\d+\\.\\d+$", "v1.2", "v1."),
    ] {
        let pattern = Pattern::parse(source).unwrap();
        assert!(pattern.is_match(yes), "{source} {yes}");
        assert!(!pattern.is_match(no), "{source} {no}");
        let generated = pattern.generate(0, 0, None, &[]).unwrap();
        assert!(pattern.is_match(&generated), "{source} {generated}");
        let long = pattern
            .generate(1, 6, Some(8), &[&generated])
            .unwrap_or_default();
        assert!(
            long.is_empty() || (pattern.is_match(&long) && (6..=8).contains(&long.len())),
            "{source} {long}"
        );
    }
    for unsupported in ["(?i)abc", "\\bword", "(a)\\1", "[a-"] {
        assert!(Pattern::parse(unsupported).is_err(), "{unsupported}");
    }
}

#[test]
fn generated_values_respect_the_lengths_and_avoid_the_current_value() {
    let pattern = Pattern::parse("^[a-z]{2,}$").unwrap();
    let value = pattern.generate(0, 5, Some(6), &[]).unwrap();
    assert!(
        (5..=6).contains(&value.len()) && pattern.is_match(&value),
        "{value}"
    );
    let other = pattern.generate(0, 5, Some(6), &[&value]).unwrap();
    assert_ne!(other, value);
    // Nothing of 3 characters matches exactly 2 letters.
    assert_eq!(
        Pattern::parse("^[a-z]{2}$")
            .unwrap()
            .generate(0, 3, None, &[]),
        None
    );
    // Unanchored: a match anywhere.
    assert!(Pattern::parse("[0-9]+").unwrap().is_match("abc1"));
    assert!(!Pattern::parse("^[0-9]+$").unwrap().is_match("abc1"));
}

#[test]
fn the_matcher_gives_up_on_exponential_backtracking_instead_of_hanging() {
    let pattern = Pattern::parse("^([a-z]+)*$").unwrap();
    let text = format!("{}!", "a".repeat(40));
    assert_eq!(pattern.matches(&text), None);
    assert!(!pattern.is_match(&text));
    assert_eq!(pattern.matches("aaaa"), Some(true));
}
