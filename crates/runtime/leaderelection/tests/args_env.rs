//! The environment-variable fallbacks of `LeaderElectionArgs`. One test in its own
//! binary: it changes the process environment, which no other thread here reads.

use std::time::Duration;

use clap::Parser;
use leaderelection::LeaderElectionArgs;

#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    leader_election: LeaderElectionArgs,
}

// The environment can only be changed with `unsafe` (another thread could be reading
// it); the workspace denies `unsafe_code` everywhere else. Safe alternatives (running
// the test binary again as a child with `Command::env`) would hide what is tested.
#[allow(unsafe_code)]
#[test]
fn every_flag_falls_back_to_its_environment_variable_and_flags_win() {
    let vars = [
        ("LEADER_ELECT", "true"),
        ("LEADER_ELECT_LEASE_DURATION", "1m"),
        ("LEADER_ELECT_RENEW_DEADLINE", "40s"),
        ("LEADER_ELECT_RETRY_PERIOD", "1.5s"),
        ("LEADER_ELECT_RESOURCE_NAMESPACE", "ops"),
        ("LEADER_ELECT_RESOURCE_NAME", "vm-controller"),
    ];
    for (name, value) in vars {
        // SAFETY: this test binary has a single test, so no other thread reads or
        // writes the environment meanwhile.
        unsafe { std::env::set_var(name, value) };
    }
    let args = Cli::try_parse_from(["controller"]).unwrap().leader_election;
    assert!(args.leader_elect);
    assert_eq!(args.lease_duration, Duration::from_secs(60));
    assert_eq!(args.renew_deadline, Duration::from_secs(40));
    assert_eq!(args.retry_period, Duration::from_millis(1500));
    assert_eq!(args.resource_namespace.as_deref(), Some("ops"));
    assert_eq!(args.resource_name.as_deref(), Some("vm-controller"));

    let args = Cli::try_parse_from([
        "controller",
        "--leader-elect=false",
        "--leader-elect-lease-duration=30s",
    ])
    .unwrap()
    .leader_election;
    assert!(!args.leader_elect, "the flag wins over the environment");
    assert_eq!(args.lease_duration, Duration::from_secs(30));

    // SAFETY: as above.
    unsafe { std::env::set_var("LEADER_ELECT_RETRY_PERIOD", "soon") };
    let error = Cli::try_parse_from(["controller"]).unwrap_err().to_string();
    assert!(error.contains("invalid duration \"soon\""), "{error}");
    for (name, _) in vars {
        // SAFETY: as above.
        unsafe { std::env::remove_var(name) };
    }
}
