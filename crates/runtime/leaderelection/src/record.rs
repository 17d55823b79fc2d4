//! The leader election record: client-go's `resourcelock.LeaderElectionRecord` and the
//! conversions to and from a `coordination.k8s.io/v1` Lease spec
//! (`LeaseSpecToLeaderElectionRecord`, `LeaderElectionRecordToLeaseSpec`).
//!
//! The record is what every candidate reads and the leader writes. Only two of its
//! fields drive the election: `holder_identity` (who holds the lock; empty means
//! nobody, so anyone may take it at once) and `lease_duration_seconds` (how long the
//! *holder* promises to stay leader without renewing, as judged by each reader's own
//! clock). The timestamps are informational: no candidate compares them with its
//! clock, because they were produced by another machine's clock (see the crate docs,
//! "Why local observed time"). They still matter in one way: they change on every
//! renewal, so the record as a whole changes, and a *change* is what tells the other
//! candidates that the leader is alive.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;

/// client-go's `resourcelock.LeaderElectionRecord`: the state of one election, stored
/// in the lock object (here the spec of a Lease).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaderElectionRecord {
    /// The identity of the holder. Empty means "nobody": the previous leader released
    /// the lock, and any candidate may acquire it immediately.
    pub holder_identity: String,
    /// How long, in whole seconds, the holder may go without renewing before the other
    /// candidates consider the lock expired. Each candidate measures it from the moment
    /// *it* last saw the record change, on its own clock.
    pub lease_duration_seconds: i32,
    /// When the current holder acquired the lock (the holder's wall clock).
    pub acquire_time: Option<Timestamp>,
    /// When the current holder last renewed the lock (the holder's wall clock).
    pub renew_time: Option<Timestamp>,
    /// How many times the lock changed hands. Incremented by every acquisition by a
    /// candidate that was not the observed holder; kept by renewals and by release.
    pub leader_transitions: i32,
}

/// client-go's `LeaseSpecToLeaderElectionRecord`: missing fields read as empty/zero.
pub fn lease_spec_to_leader_election_record(spec: &LeaseSpec) -> LeaderElectionRecord {
    LeaderElectionRecord {
        holder_identity: spec.holder_identity.clone().unwrap_or_default(),
        lease_duration_seconds: spec.lease_duration_seconds.unwrap_or(0),
        acquire_time: spec.acquire_time.as_ref().map(|t| t.0),
        renew_time: spec.renew_time.as_ref().map(|t| t.0),
        leader_transitions: spec.lease_transitions.unwrap_or(0),
    }
}

/// client-go's `LeaderElectionRecordToLeaseSpec`: every election field is written, so
/// a record read back from the Lease equals the record written.
pub fn leader_election_record_to_lease_spec(record: &LeaderElectionRecord) -> LeaseSpec {
    LeaseSpec {
        holder_identity: Some(record.holder_identity.clone()),
        lease_duration_seconds: Some(record.lease_duration_seconds),
        acquire_time: record.acquire_time.map(MicroTime),
        renew_time: record.renew_time.map(MicroTime),
        lease_transitions: Some(record.leader_transitions),
        ..LeaseSpec::default()
    }
}

/// The current wall-clock time at the precision a Lease stores (`MicroTime`:
/// microseconds), so that a record read back from the API server compares equal to
/// the record that was written.
pub fn now_micros() -> Timestamp {
    let now = Timestamp::now();
    Timestamp::from_microsecond(now.as_microsecond()).unwrap_or(now)
}

/// A lease duration as the whole seconds a record stores, rounded **up**.
///
/// client-go truncates (`int(LeaseDuration / time.Second)`), so a 1.5 s lease is
/// written as 1 s and the other candidates would give up on the leader half a second
/// before the leader gives up on itself. Rounding up keeps the safe direction: the
/// others wait at least as long as configured. (For whole seconds both agree.)
pub fn lease_duration_seconds(lease_duration: Duration) -> i32 {
    let seconds = lease_duration
        .as_secs()
        .saturating_add(u64::from(lease_duration.subsec_nanos() > 0));
    i32::try_from(seconds).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_survives_the_round_trip_through_a_lease_spec() {
        let now = now_micros();
        let record = LeaderElectionRecord {
            holder_identity: "a".into(),
            lease_duration_seconds: 15,
            acquire_time: Some(now),
            renew_time: Some(now),
            leader_transitions: 3,
        };
        let spec = leader_election_record_to_lease_spec(&record);
        assert_eq!(spec.holder_identity.as_deref(), Some("a"));
        assert_eq!(spec.lease_transitions, Some(3));
        assert_eq!(lease_spec_to_leader_election_record(&spec), record);
    }

    #[test]
    fn an_empty_spec_reads_as_an_unheld_record() {
        let record = lease_spec_to_leader_election_record(&LeaseSpec::default());
        assert_eq!(record, LeaderElectionRecord::default());
        assert!(record.holder_identity.is_empty());
    }

    #[test]
    fn lease_durations_round_up_to_whole_seconds() {
        assert_eq!(lease_duration_seconds(Duration::from_secs(15)), 15);
        assert_eq!(lease_duration_seconds(Duration::from_millis(1500)), 2);
        assert_eq!(lease_duration_seconds(Duration::from_millis(1)), 1);
        assert_eq!(lease_duration_seconds(Duration::ZERO), 0);
        assert_eq!(lease_duration_seconds(Duration::MAX), i32::MAX);
    }

    #[test]
    fn now_has_microsecond_precision() {
        let now = now_micros();
        assert_eq!(now.subsec_nanosecond() % 1_000, 0);
    }
}
