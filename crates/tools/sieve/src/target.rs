//! Targets: the controller a run starts, and what of the cluster its end state is.
//!
//! A target is a command line with placeholders the runner fills for each incarnation
//! of the controller:
//!
//! | placeholder | becomes |
//! |---|---|
//! | `{kubeconfig}` | a kubeconfig whose server is the recording proxy |
//! | `{namespace}` | the run's namespace (a controller that can watch one namespace should) |
//! | `{state_dir}` | a directory that outlives the controller's restarts within one run (the VM controller's file driver keeps its "servers" there) |
//! | `{bin}` | the directory of the built binaries (`--bin-dir`) |
//!
//! and the resources captured as the end state: every object of those kinds in the
//! run's namespace. The workload's own kinds are captured in full (the invariants check
//! owner references to them). [`preset`] has this repository's three controllers, the Go
//! sample-controller, and the deliberately broken Foo controller's three modes (the test
//! fixture `src/bin/sieve-broken-foo.rs`, one bug each for the tool to catch);
//! `--command` and `--capture` describe any other.

use std::time::Duration;

use serde::Serialize;

use crate::ignore::IgnoreRule;

/// One kind the end state captures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Captured {
    /// `group/version` (`v1` for the core group).
    pub api_version: String,
    /// The kind.
    pub kind: String,
}

impl Captured {
    /// `apps/v1` + `Deployment`.
    pub fn new(api_version: &str, kind: &str) -> Self {
        Self {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
        }
    }

    /// Parses `Kind.group/version` or `Kind.version` (`Deployment.apps/v1`,
    /// `ConfigMap.v1`), as `--capture` takes it.
    pub fn parse(text: &str) -> Option<Self> {
        let (kind, api_version) = text.split_once('.')?;
        (!kind.is_empty() && !api_version.is_empty()).then(|| Self::new(api_version, kind))
    }
}

/// The controller a run tests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Target {
    /// Its name in traces, reports and replay commands.
    pub name: String,
    /// The program and its arguments, with placeholders (see the module docs).
    pub command: Vec<String>,
    /// Environment variables set for it.
    pub env: Vec<(String, String)>,
    /// The owned kinds captured besides the workload's own.
    pub owned: Vec<Captured>,
    /// What the end-state comparison drops for this target (see
    /// [`diff::Options`](crate::diff::Options)): values the cluster chooses per run.
    /// `--ignore` and `--ignore-file` add to a preset's.
    #[serde(serialize_with = "as_text")]
    pub ignore: Vec<IgnoreRule>,
    /// How many replicas run at once (a shard group: more than one). Each gets a proxy
    /// listener, so its own `{kubeconfig}`, and the crash point kills the replica that
    /// sent the write.
    pub replicas: usize,
    /// A quiet period longer than the runner's, for a target whose work waits on a
    /// timer (a shard group's handover waits for a dead member's lease to run out).
    pub quiet: Option<Duration>,
}

/// The flags every one of this repository's binaries gets: no listeners (several runs
/// may overlap on one machine), plain logs.
const OUR_FLAGS: [&str; 6] = [
    "--kubeconfig",
    "{kubeconfig}",
    "--namespace",
    "{namespace}",
    "--metrics-bind-address=0",
    "--health-probe-bind-address=0",
];

/// The preset of `name`: `sample-controller`, `vm-controller`, `myweb-operator` (this
/// repository's binaries, from `{bin}`), `sample-controller-shards` (two replicas of
/// sample-controller in one shard group), `go-sample-controller` (the Go original, at
/// the path `go_bin` names) or `broken-foo-intermediate`, `broken-foo-unobserved`,
/// `broken-foo-stale` (`{bin}/sieve-broken-foo --mode <mode>`: a test fixture, wrong on
/// purpose, that the perturbation of its name must catch).
pub fn preset(name: &str, go_bin: Option<&str>) -> Option<Target> {
    let ours = |binary: &str, extra: &[&str]| {
        let mut command = vec![format!("{{bin}}/{binary}")];
        command.extend(OUR_FLAGS.iter().chain(extra).map(|s| (*s).to_owned()));
        command
    };
    let env = vec![("RUST_LOG".to_owned(), "info".to_owned())];
    let service_ips = vec![
        IgnoreRule::everywhere(&["spec", "clusterIP"]),
        IgnoreRule::everywhere(&["spec", "clusterIPs"]),
    ];
    let target = match name {
        "sample-controller" => Target {
            name: name.to_owned(),
            command: ours("sample-controller", &[]),
            env,
            owned: vec![Captured::new("apps/v1", "Deployment")],
            ignore: Vec::new(),
            replicas: 1,
            quiet: None,
        },
        // A shard group of two (KEP-5866, `--shard-group`): both active, each caching and
        // reconciling the Foos whose UIDs hash into its ranges. A crash point kills the
        // replica that wrote; its successor is a new member, and its ranges move once
        // the dead member's lease (4 s) runs out: a handover inside the step, which the
        // longer quiet period waits out.
        "sample-controller-shards" => Target {
            name: name.to_owned(),
            command: ours(
                "sample-controller",
                &[
                    "--shard-group=sieve-foos",
                    // The group's Leases in the run's namespace: gone with it.
                    "--shard-lease-namespace={namespace}",
                    "--shard-lease-duration=4s",
                    "--shard-renew-deadline=3s",
                    "--shard-retry-period=1s",
                ],
            ),
            env,
            owned: vec![Captured::new("apps/v1", "Deployment")],
            ignore: Vec::new(),
            replicas: 2,
            quiet: Some(Duration::from_secs(7)),
        },
        "vm-controller" => Target {
            name: name.to_owned(),
            command: ours(
                "vm-controller",
                &[
                    "--vm-driver",
                    "file",
                    "--state-dir",
                    "{state_dir}",
                    // No usage refresh within a run: it writes on a timer, not on
                    // the workload, and a step would never be quiescent.
                    "--usage-period",
                    "1h",
                ],
            ),
            env,
            owned: Vec::new(),
            // The driver's server id is a fresh UUID per server; the usage and the
            // status's write time are the driver's and the clock's.
            ignore: [
                &["status", "server", "id"][..],
                &["status", "server", "usage"],
                &["status", "lastUpdateTime"],
            ]
            .iter()
            .map(|path| IgnoreRule::everywhere(path))
            .collect(),
            replicas: 1,
            quiet: None,
        },
        "myweb-operator" => Target {
            name: name.to_owned(),
            command: ours("myweb-operator", &[]),
            env,
            owned: vec![
                Captured::new("v1", "ConfigMap"),
                Captured::new("apps/v1", "Deployment"),
                Captured::new("v1", "Service"),
            ],
            ignore: service_ips,
            replicas: 1,
            quiet: None,
        },
        "go-sample-controller" => Target {
            name: name.to_owned(),
            // sample-controller's main.go: -kubeconfig (it watches every namespace).
            command: vec![
                go_bin.unwrap_or("sample-controller").to_owned(),
                "-kubeconfig".to_owned(),
                "{kubeconfig}".to_owned(),
            ],
            env: Vec::new(),
            owned: vec![Captured::new("apps/v1", "Deployment")],
            ignore: Vec::new(),
            replicas: 1,
            quiet: None,
        },
        _ => {
            let mode = name.strip_prefix("broken-foo-")?;
            if !BROKEN_MODES.contains(&mode) {
                return None;
            }
            let command = format!(
                "{{bin}}/sieve-broken-foo --mode {mode} --kubeconfig {{kubeconfig}} --namespace {{namespace}}"
            );
            Target {
                name: name.to_owned(),
                command: split_command(&command).expect("a preset's command splits"),
                env: Vec::new(),
                owned: vec![Captured::new("apps/v1", "Deployment")],
                // The Deployment's rollout history, as kube-controller-manager writes
                // it: its conditions name the ReplicaSet (after a generated name in
                // intermediate mode), and a Deployment created at its final size (a
                // level-triggered sync whose Foo's first state was withheld) has its
                // conditions in another order and observedGeneration 1, not 2. The
                // bugs show in the specs, the Foo's status, and which Deployments exist.
                ignore: [
                    &["status", "conditions"][..],
                    &["status", "observedGeneration"],
                ]
                .iter()
                .map(|path| IgnoreRule::everywhere(path))
                .collect(),
                replicas: 1,
                quiet: None,
            }
        }
    };
    Some(target)
}

/// Splits a `--command` into words as a POSIX shell would: `'...'` and `"..."` quote,
/// `\` escapes (`sh -c 'kubectl get foos --watch | ./filter.py'` is three words).
/// `None`: an unclosed quote.
pub fn split_command(command: &str) -> Option<Vec<String>> {
    shlex::split(command)
}

/// Serializes rules as their text (`Deployment:.status.conditions[*].message`).
fn as_text<S: serde::Serializer>(rules: &[IgnoreRule], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(rules.iter().map(ToString::to_string))
}

/// The modes of the deliberately broken Foo controller (`sieve-broken-foo --mode`), each
/// named after the perturbation that must catch it.
pub const BROKEN_MODES: [&str; 3] = ["intermediate", "unobserved", "stale"];

/// The names [`preset`] knows.
pub const PRESETS: [&str; 8] = [
    "sample-controller",
    "sample-controller-shards",
    "vm-controller",
    "myweb-operator",
    "go-sample-controller",
    "broken-foo-intermediate",
    "broken-foo-unobserved",
    "broken-foo-stale",
];

/// What fills the placeholders of one run.
#[derive(Debug, Clone)]
pub struct Placeholders<'a> {
    /// `{kubeconfig}`.
    pub kubeconfig: &'a str,
    /// `{namespace}`.
    pub namespace: &'a str,
    /// `{state_dir}`.
    pub state_dir: &'a str,
    /// `{bin}`.
    pub bin: &'a str,
}

impl Target {
    /// The command line with its placeholders filled.
    pub fn command_line(&self, with: &Placeholders<'_>) -> Vec<String> {
        self.command
            .iter()
            .map(|arg| {
                arg.replace("{kubeconfig}", with.kubeconfig)
                    .replace("{namespace}", with.namespace)
                    .replace("{state_dir}", with.state_dir)
                    .replace("{bin}", with.bin)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_fill_their_placeholders() {
        let with = Placeholders {
            kubeconfig: "/k",
            namespace: "ns",
            state_dir: "/s",
            bin: "/b",
        };
        let vm = preset("vm-controller", None).expect("a preset");
        let line = vm.command_line(&with);
        assert_eq!(line[0], "/b/vm-controller");
        assert!(line.windows(2).any(|w| w == ["--kubeconfig", "/k"]));
        assert!(line.windows(2).any(|w| w == ["--namespace", "ns"]));
        assert!(line.windows(2).any(|w| w == ["--state-dir", "/s"]));
        assert!(line.iter().all(|a| !a.contains('{')), "{line:?}");
        let go = preset("go-sample-controller", Some("/go/sample-controller")).expect("a preset");
        assert_eq!(
            go.command_line(&with),
            ["/go/sample-controller", "-kubeconfig", "/k"]
        );
        for name in PRESETS {
            assert!(preset(name, None).is_some(), "{name}");
        }
        assert!(preset("kube-scheduler", None).is_none());
        let broken = preset("broken-foo-stale", None).expect("a preset");
        assert_eq!(
            broken.command_line(&with),
            [
                "/b/sieve-broken-foo",
                "--mode",
                "stale",
                "--kubeconfig",
                "/k",
                "--namespace",
                "ns"
            ]
        );
        assert_eq!(broken.owned, [Captured::new("apps/v1", "Deployment")]);
        assert!(preset("broken-foo-sloppy", None).is_none());
    }

    #[test]
    fn commands_split_as_a_shell_splits_them() {
        assert_eq!(
            split_command(
                r#"bash -c 'kubectl get foos --watch | python3 "my filter.py"' --ns {namespace}"#
            )
            .unwrap(),
            [
                "bash",
                "-c",
                r#"kubectl get foos --watch | python3 "my filter.py""#,
                "--ns",
                "{namespace}"
            ]
        );
        assert_eq!(split_command(r"ctl a\ b  c").unwrap(), ["ctl", "a b", "c"]);
        assert_eq!(split_command("ctl 'unclosed"), None);
    }

    #[test]
    fn capture_flags_parse() {
        assert_eq!(
            Captured::parse("Deployment.apps/v1"),
            Some(Captured::new("apps/v1", "Deployment"))
        );
        assert_eq!(
            Captured::parse("ConfigMap.v1"),
            Some(Captured::new("v1", "ConfigMap"))
        );
        assert_eq!(Captured::parse("ConfigMap"), None);
        assert_eq!(Captured::parse(".v1"), None);
    }
}
