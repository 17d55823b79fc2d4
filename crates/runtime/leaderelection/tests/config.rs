//! client-go's `NewLeaderElector` checks, in its order.

use std::sync::Arc;
use std::time::Duration;

use leaderelection::testing::MemoryLease;
use leaderelection::{ConfigError, LeaderCallbacks, LeaderElectionConfig, LeaderElector};

fn config(identity: &str, lease: u64, renew: u64, retry: u64) -> LeaderElectionConfig {
    let mut config = LeaderElectionConfig::new(Arc::new(MemoryLease::new("l").lock(identity)));
    config.lease_duration = Duration::from_millis(lease);
    config.renew_deadline = Duration::from_millis(renew);
    config.retry_period = Duration::from_millis(retry);
    config
}

fn callbacks() -> LeaderCallbacks {
    LeaderCallbacks::new(|_token| async {}, || {})
}

#[test]
fn the_defaults_are_kubernetes_and_valid() {
    let config = LeaderElectionConfig::new(Arc::new(MemoryLease::new("l").lock("a")));
    assert_eq!(config.lease_duration, Duration::from_secs(15));
    assert_eq!(config.renew_deadline, Duration::from_secs(10));
    assert_eq!(config.retry_period, Duration::from_secs(2));
    assert!(!config.release_on_cancel);
    assert_eq!(config.name, "memory/l");
    assert_eq!(config.validate(), Ok(()));
    assert!(LeaderElector::new(config, callbacks()).is_ok());
}

#[test]
fn invalid_configs_are_rejected_with_client_go_messages() {
    let cases = [
        (
            config("a", 10_000, 10_000, 2_000),
            "leaseDuration must be greater than renewDeadline",
        ),
        (
            config("a", 15_000, 20_000, 2_000),
            "leaseDuration must be greater than renewDeadline",
        ),
        // 1.2 * 2 s = 2.4 s: a 2.4 s renew deadline is one jittered retry, not more.
        (
            config("a", 15_000, 2_400, 2_000),
            "renewDeadline must be greater than retryPeriod*JitterFactor",
        ),
        (
            config("a", 0, 0, 0),
            "leaseDuration must be greater than renewDeadline",
        ),
        (
            config("a", 15_000, 10_000, 0),
            "retryPeriod must be greater than zero",
        ),
        (config("", 15_000, 10_000, 2_000), "Lock identity is empty"),
    ];
    for (config, message) in cases {
        let debug = format!("{config:?}");
        let error = config.validate().expect_err(&debug);
        assert!(error.to_string().starts_with(message), "{debug}: {error}");
        let error = LeaderElector::new(config, callbacks()).expect_err(&debug);
        assert!(error.to_string().starts_with(message), "{debug}: {error}");
    }
}

#[test]
fn errors_are_typed_and_carry_the_values() {
    assert_eq!(
        config("a", 15_000, 2_400, 2_000).validate(),
        Err(
            ConfigError::RenewDeadlineNotGreaterThanJitteredRetryPeriod {
                renew_deadline: Duration::from_millis(2_400),
                retry_period: Duration::from_secs(2),
            }
        )
    );
    assert_eq!(
        config("a", 3_000, 2_401, 2_000).validate(),
        Ok(()),
        "just above retry * 1.2 is enough"
    );
    assert_eq!(
        config("a", 10_000, 10_000, 2_000).validate(),
        Err(ConfigError::LeaseDurationNotGreaterThanRenewDeadline {
            lease_duration: Duration::from_secs(10),
            renew_deadline: Duration::from_secs(10),
        })
    );
    assert_eq!(
        config("", 15_000, 10_000, 2_000).validate(),
        Err(ConfigError::EmptyIdentity)
    );
}

#[test]
fn absurd_durations_are_judged_without_panicking() {
    let mut config = config("a", 0, 0, 0);
    config.lease_duration = Duration::MAX;
    config.renew_deadline = Duration::MAX;
    config.retry_period = Duration::MAX;
    assert!(config.validate().is_err());
    config.renew_deadline = Duration::MAX / 2;
    assert!(matches!(
        config.validate(),
        Err(ConfigError::RenewDeadlineNotGreaterThanJitteredRetryPeriod { .. })
    ));
}
