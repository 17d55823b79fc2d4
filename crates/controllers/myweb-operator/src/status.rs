//! The MyWeb's status: a `Ready` condition (with reason, message and
//! observedGeneration), the tutorial's `completed` flag, and `observedGeneration`.
//!
//! Written only when it changes, so a reconcile that finds everything in place costs no
//! status write, and a condition's `lastTransitionTime` moves only when its `status`
//! does (the API conventions for conditions).

use apis::operator::v1::{CONDITION_READY, MyWeb, MyWebStatus};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

/// `Ready=True`: the page is served.
pub const REASON_AVAILABLE: &str = "Available";
/// `Ready=False`: the Deployment is still rolling out.
pub const REASON_PROGRESSING: &str = "Progressing";

/// What the reconcile found, as a `Ready` condition's status, reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readiness {
    /// Whether the page is served as the spec says.
    pub ready: bool,
    /// CamelCase reason.
    pub reason: String,
    /// For humans.
    pub message: String,
}

impl Readiness {
    /// Not ready, because of `reason`.
    pub fn not_ready(reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            ready: false,
            reason: reason.into(),
            message: message.into(),
        }
    }
}

/// Whether the Deployment has rolled out the current template and serves it with every
/// replica available: `kubectl rollout status`'s test.
pub fn deployment_readiness(deployment: &Deployment, node_port: i32) -> Readiness {
    let name = deployment.metadata.name.as_deref().unwrap_or_default();
    let want = deployment.spec.replicas.unwrap_or(1);
    let status = deployment.status.clone().unwrap_or_default();
    let observed =
        status.observed_generation.unwrap_or(0) >= deployment.metadata.generation.unwrap_or(0);
    let updated = status.updated_replicas.unwrap_or(0);
    let available = status.available_replicas.unwrap_or(0);
    let total = status.replicas.unwrap_or(0);
    if observed && updated >= want && total <= updated && available >= updated && available > 0 {
        Readiness {
            ready: true,
            reason: REASON_AVAILABLE.to_string(),
            message: format!("the page is served on node port {node_port}"),
        }
    } else {
        Readiness::not_ready(
            REASON_PROGRESSING,
            format!(
                "waiting for Deployment {name} to roll out: {updated} of {want} replicas updated, {available} available"
            ),
        )
    }
}

/// The status `web` should have given `readiness`, or `None` when it already has it.
/// `now` is the transition time of a condition whose status changes.
pub fn next_status(web: &MyWeb, readiness: &Readiness, now: Timestamp) -> Option<MyWebStatus> {
    let current = web.status.clone().unwrap_or_default();
    let generation = web.metadata.generation;
    let status = if readiness.ready { "True" } else { "False" };
    let previous = current.condition(CONDITION_READY);
    let last_transition_time = match previous {
        Some(c) if c.status == status => c.last_transition_time.clone(),
        _ => Time(now),
    };
    let ready = Condition {
        type_: CONDITION_READY.to_string(),
        status: status.to_string(),
        reason: readiness.reason.clone(),
        message: readiness.message.clone(),
        observed_generation: generation,
        last_transition_time,
    };
    let mut conditions: Vec<Condition> = current
        .conditions
        .iter()
        .filter(|c| c.type_ != CONDITION_READY)
        .cloned()
        .collect();
    conditions.push(ready);
    let next = MyWebStatus {
        conditions,
        completed: readiness.ready,
        observed_generation: generation,
    };
    (next != current).then_some(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use apis::operator::v1::MyWebSpec;
    use k8s_openapi::api::apps::v1::{DeploymentSpec, DeploymentStatus};

    fn web(generation: i64) -> MyWeb {
        let mut web = MyWeb::new("site", MyWebSpec::new("nginx", 30080, ""));
        web.metadata.generation = Some(generation);
        web
    }

    fn deployment(
        generation: i64,
        observed: i64,
        updated: i32,
        available: i32,
        total: i32,
    ) -> Deployment {
        let mut d = Deployment::default();
        d.metadata.name = Some("site".into());
        d.metadata.generation = Some(generation);
        d.spec = DeploymentSpec {
            replicas: Some(1),
            ..Default::default()
        };
        d.status = Some(DeploymentStatus {
            observed_generation: Some(observed),
            updated_replicas: Some(updated),
            available_replicas: Some(available),
            replicas: Some(total),
            ..Default::default()
        });
        d
    }

    #[test]
    fn ready_only_once_the_current_template_is_rolled_out_and_available() {
        assert!(deployment_readiness(&deployment(2, 2, 1, 1, 1), 30080).ready);
        // The controller has not seen the new template yet.
        assert!(!deployment_readiness(&deployment(3, 2, 1, 1, 1), 30080).ready);
        // An old pod is still around next to the new one.
        assert!(!deployment_readiness(&deployment(2, 2, 1, 1, 2), 30080).ready);
        // Nothing available.
        let r = deployment_readiness(&deployment(2, 2, 1, 0, 1), 30080);
        assert!(!r.ready);
        assert_eq!(r.reason, REASON_PROGRESSING);
        assert!(r.message.contains("0 available"), "{}", r.message);
    }

    #[test]
    fn status_is_rewritten_only_when_it_changes_and_transitions_keep_their_time() {
        let t0 = Timestamp::from_second(1_000).unwrap();
        let t1 = Timestamp::from_second(2_000).unwrap();
        let mut web = web(1);
        let waiting = Readiness::not_ready("Progressing", "waiting");
        let first = next_status(&web, &waiting, t0).expect("no status yet");
        assert!(!first.completed);
        assert_eq!(first.observed_generation, Some(1));
        web.status = Some(first.clone());
        assert_eq!(next_status(&web, &waiting, t1), None, "nothing changed");

        // Same status, new message: rewritten, transition time kept.
        let other = Readiness::not_ready("ApplyFailed", "port taken");
        let second = next_status(&web, &other, t1).unwrap();
        let ready = second.condition(CONDITION_READY).unwrap();
        assert_eq!(ready.last_transition_time, Time(t0));
        assert_eq!(ready.message, "port taken");

        // False -> True: a new transition time, completed, and the generation seen.
        web.status = Some(second);
        web.metadata.generation = Some(2);
        let ok = Readiness {
            ready: true,
            reason: "Available".into(),
            message: "ok".into(),
        };
        let third = next_status(&web, &ok, t1).unwrap();
        let ready = third.condition(CONDITION_READY).unwrap();
        assert_eq!(
            (ready.status.as_str(), ready.observed_generation),
            ("True", Some(2))
        );
        assert_eq!(ready.last_transition_time, Time(t1));
        assert!(third.completed);
        assert_eq!(third.conditions.len(), 1);
    }
}
