//! `LeaderElectionArgs`: flags, defaults and Go-style durations. (The environment
//! fallbacks are in `args_env.rs`, a separate test binary, because the environment
//! is shared by every thread of a process.)

use std::time::Duration;

use clap::Parser;
use leaderelection::LeaderElectionArgs;
use leaderelection::testing::MemoryLease;

#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    leader_election: LeaderElectionArgs,
}

fn parse(args: &[&str]) -> Result<LeaderElectionArgs, clap::Error> {
    let argv = std::iter::once("controller").chain(args.iter().copied());
    Cli::try_parse_from(argv).map(|cli| cli.leader_election)
}

#[test]
fn defaults_match_kubernetes_components() {
    let args = parse(&[]).unwrap();
    assert_eq!(args, LeaderElectionArgs::default());
    assert!(!args.leader_elect);
    assert_eq!(args.lease_duration, Duration::from_secs(15));
    assert_eq!(args.renew_deadline, Duration::from_secs(10));
    assert_eq!(args.retry_period, Duration::from_secs(2));
    assert_eq!(args.resource_namespace, None);
    assert_eq!(args.resource_name, None);
}

#[test]
fn every_flag_is_parsed() {
    let args = parse(&[
        "--leader-elect",
        "--leader-elect-lease-duration=1m30s",
        "--leader-elect-renew-deadline",
        "45s",
        "--leader-elect-retry-period=500ms",
        "--leader-elect-resource-namespace=ops",
        "--leader-elect-resource-name",
        "foo-controller",
    ])
    .unwrap();
    assert!(args.leader_elect);
    assert_eq!(args.lease_duration, Duration::from_secs(90));
    assert_eq!(args.renew_deadline, Duration::from_secs(45));
    assert_eq!(args.retry_period, Duration::from_millis(500));
    assert_eq!(args.resource_namespace.as_deref(), Some("ops"));
    assert_eq!(args.resource_name.as_deref(), Some("foo-controller"));
}

#[test]
fn leader_elect_is_a_go_style_boolean() {
    assert!(parse(&["--leader-elect=true"]).unwrap().leader_elect);
    assert!(!parse(&["--leader-elect=false"]).unwrap().leader_elect);
    // Like Go's flag package, a separate word is not the flag's value.
    assert!(parse(&["--leader-elect", "false"]).is_err());
    assert!(parse(&["--leader-elect=maybe"]).is_err());
}

#[test]
fn bad_durations_are_rejected_with_the_reason() {
    for (flag, value, reason) in [
        ("--leader-elect-lease-duration", "15", "missing unit"),
        ("--leader-elect-renew-deadline", "10 s", "unknown unit"),
        ("--leader-elect-retry-period", "-2s", "negative"),
    ] {
        let error = parse(&[&format!("{flag}={value}")])
            .unwrap_err()
            .to_string();
        assert!(error.contains(flag), "{error}");
        assert!(error.contains(reason), "{error}");
    }
}

#[test]
fn config_and_lock_use_the_flags_or_the_binarys_defaults() {
    let args = parse(&[
        "--leader-elect-lease-duration=20s",
        "--leader-elect-renew-deadline=15s",
    ])
    .unwrap();
    let lock = std::sync::Arc::new(MemoryLease::new("l").lock("me"));
    let config = args.config(lock);
    assert_eq!(config.lease_duration, Duration::from_secs(20));
    assert_eq!(config.renew_deadline, Duration::from_secs(15));
    assert_eq!(config.retry_period, Duration::from_secs(2));
    assert_eq!(config.validate(), Ok(()));

    let invalid = parse(&["--leader-elect-lease-duration=5s"]).unwrap();
    let lock = std::sync::Arc::new(MemoryLease::new("l").lock("me"));
    assert!(
        invalid.config(lock).validate().is_err(),
        "5s lease < 10s renew deadline"
    );
}
