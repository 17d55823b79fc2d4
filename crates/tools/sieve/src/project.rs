//! A kcr project as a target: `kcr sieve` (issue 57). Everything a pass needs comes
//! from the project itself, so its user writes no workload and names no kind:
//!
//! 1. the manager binary, built with `cargo build --bin <projectName>` (PROJECT);
//! 2. a control plane of its own (the `hack/control-plane.sh` that `kcr envtest` uses,
//!    `up --dir <out>/cp`, compaction off so stale-state plans can list at old
//!    versions), the CRDs of `deploy/crd` applied;
//! 3. one workload per sample of `deploy/samples`, derived from its CRD's OpenAPI
//!    schema ([`derive`](crate::derive), as Acto does), plus the user's own workloads in
//!    `hack/sieve/*.yaml`, if any;
//! 4. the kinds captured besides the project's own: those the manager's ClusterRole
//!    (`deploy/rbac/role.yaml`, generated from the code) lets it create, resolved by
//!    discovery (a Memcached's Deployment);
//! 5. for each workload a [`Session`]: the learning run, every plan (the manager gets
//!    `--namespace`, so plans run side by side), the differential oracle; ignore rules
//!    from `hack/sieve/ignore`, if the file exists;
//! 6. `<out>/report.md`: one table per workload, each failed plan with its findings
//!    and the `sieve run` command that replays it.
//!
//! Why in the project's own test command: the research that found most operator bugs
//! (Sieve, Acto) drove each operator for days of set-up; here it is the scaffold's
//! first hour, and every edit of the reconciler after it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value as Json;

use crate::derive::Depth;
use crate::derive::cli::{DeriveArgs, run as derive_run};
use crate::ignore::IgnoreRule;
use crate::runner::{Environment, Timing};
use crate::session::Session;
use crate::target::{Captured, Target};
use crate::workload::Workload;

/// Why a pass could not be carried out (not a finding about the project).
#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    /// The project is not what a pass needs.
    #[error("{0}")]
    Project(String),
    /// A command (cargo, the control-plane script, kubectl) failed.
    #[error("{command}: {detail}")]
    Command {
        /// The command.
        command: String,
        /// Its status and the tail of its output.
        detail: String,
    },
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A workload could not be derived.
    #[error(transparent)]
    Derive(#[from] crate::derive::cli::CliError),
    /// A workload file is not valid.
    #[error(transparent)]
    Workload(#[from] crate::workload::WorkloadError),
    /// An ignore rule of `hack/sieve/ignore` does not parse.
    #[error("hack/sieve/ignore: {0}")]
    Ignore(#[from] crate::ignore::ParseError),
    /// A run could not be carried out.
    #[error(transparent)]
    Session(#[from] crate::session::SessionError),
    /// A run could not be carried out.
    #[error(transparent)]
    Run(#[from] crate::runner::RunError),
}

/// What `kcr sieve` runs.
#[derive(Debug, Clone)]
pub struct ProjectPass {
    /// The project's root (where PROJECT is).
    pub project_dir: PathBuf,
    /// The `hack/control-plane.sh` of the runtime checkout (`kcr envtest`'s).
    pub control_plane_script: PathBuf,
    /// Where the workloads, runs and reports go.
    pub out: PathBuf,
    /// Short (one change per spec field, at most `max_updates`) or full exploration.
    pub depth: Depth,
    /// At most this many updates per derived workload.
    pub max_updates: Option<usize>,
    /// Plans at once.
    pub jobs: usize,
    /// Only these perturbations (`intermediate`, `unobserved`, `stale`); all if empty.
    pub only: Vec<String>,
    /// Run the differential oracle after the plans.
    pub differential: bool,
    /// Start no plan after one failed (enough to show a bug is caught).
    pub stop_at_first_failure: bool,
    /// The runner's waits.
    pub timing: Timing,
    /// Replay one plan instead of the pass: `(plan id, workload file)`, judged against
    /// the learning run of an earlier pass into the same `out` (`<out>/<workload>/learn`).
    pub replay: Option<(String, PathBuf)>,
}

/// The command that replays `plan` of `workload` (what a report prints).
pub fn replay_command(plan: &str, workload: &Path, out: &Path) -> String {
    format!(
        "kcr sieve --replay {} --workload {} --out {}",
        shlex::try_quote(plan).unwrap_or_default(),
        shlex::try_quote(&workload.display().to_string()).unwrap_or_default(),
        shlex::try_quote(&out.display().to_string()).unwrap_or_default()
    )
}

/// Runs the pass (its own Tokio runtime); whether every plan and oracle passed.
pub fn run(pass: &ProjectPass) -> Result<bool, ProjectError> {
    let dir = &pass.project_dir;
    let name = project_name(dir)?;
    std::fs::create_dir_all(&pass.out).map_err(|source| ProjectError::Io {
        path: pass.out.clone(),
        source,
    })?;
    let out = std::path::absolute(&pass.out).map_err(|source| ProjectError::Io {
        path: pass.out.clone(),
        source,
    })?;
    eprintln!("kcr sieve: building the manager ({name})");
    let binary = build_manager(dir, &name)?;

    // The workloads first: a schema that yields none fails before a control plane starts.
    let workloads_dir = out.join("workloads");
    std::fs::create_dir_all(&workloads_dir).map_err(|source| ProjectError::Io {
        path: workloads_dir.clone(),
        source,
    })?;
    // A replay runs the workload file it is given: deriving again would rewrite it.
    if pass.replay.is_none() {
        derive_run(&DeriveArgs {
            crd: yaml_files(&dir.join("deploy/crd"))?,
            sample: yaml_files(&dir.join("deploy/samples"))?,
            full: pass.depth == Depth::Full,
            max_steps: pass.max_updates,
            sample_index: None,
            out: Some(workloads_dir.clone()),
        })?;
    }
    // Cluster-scoped kinds are left out: every run isolates itself in a namespace of
    // its own, and their objects would be shared between runs.
    let cluster_scoped = cluster_scoped_kinds(&yaml_files(&dir.join("deploy/crd"))?);
    let mut workloads: Vec<PathBuf> = yaml_files(&workloads_dir)?
        .into_iter()
        .filter(|w| {
            let file = w.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
            let skip = cluster_scoped.iter().any(|kind| file.starts_with(&format!("{kind}-")));
            if skip {
                eprintln!("kcr sieve: {file}: a cluster-scoped kind, not exercised (runs are isolated by namespace)");
            }
            !skip
        })
        .collect();
    workloads.extend(yaml_files(&dir.join("hack/sieve"))?);
    if let Some((_, workload)) = &pass.replay {
        workloads = vec![
            std::path::absolute(workload).map_err(|source| ProjectError::Io {
                path: workload.clone(),
                source,
            })?,
        ];
    }
    let ignore = match std::fs::read_to_string(dir.join("hack/sieve/ignore")) {
        Ok(text) => IgnoreRule::parse_lines(&text)?,
        Err(_) => Vec::new(),
    };

    let control_plane = ControlPlane::up(&pass.control_plane_script, &out.join("cp"))?;
    control_plane.kubectl(&[
        "apply",
        "--server-side",
        "-k",
        &dir.join("deploy/crd").display().to_string(),
    ])?;
    // `kubectl wait` fails at once, not waiting, on a CRD whose status has no
    // conditions yet (one applied a moment ago): try again for a while, then for real.
    let wait = |timeout: &str| {
        control_plane.kubectl(&[
            "wait",
            "--for",
            "condition=established",
            timeout,
            "crd",
            "--all",
        ])
    };
    for _ in 0..30 {
        if wait("--timeout=5s").is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    wait("--timeout=60s")?;

    let runtime = tokio::runtime::Runtime::new().map_err(|source| ProjectError::Io {
        path: PathBuf::from("a Tokio runtime"),
        source,
    })?;
    runtime.block_on(async {
        let bin_dir = binary.parent().map(Path::to_path_buf).unwrap_or_default();
        let env = Environment::open(&control_plane.dir, bin_dir).await?;
        let owned = owned_kinds(&env, &dir.join("deploy/rbac/role.yaml")).await?;
        let target = Target {
            name: name.clone(),
            command: vec![
                binary.display().to_string(),
                "--kubeconfig".into(),
                "{kubeconfig}".into(),
                "--namespace".into(),
                "{namespace}".into(),
                "--metrics-bind-address=0".into(),
                "--health-probe-bind-address=0".into(),
            ],
            env: vec![("RUST_LOG".into(), "info".into())],
            owned,
            ignore,
            replicas: 1,
            quiet: None,
        };
        eprintln!(
            "kcr sieve: {} workloads; capturing {} besides the project's kinds",
            workloads.len(),
            target
                .owned
                .iter()
                .map(|c| format!("{}.{}", c.kind, c.api_version))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let mut all_passed = true;
        let mut summary = format!("# kcr sieve: {name}\n");
        for path in &workloads {
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let text = std::fs::read_to_string(path).map_err(|source| ProjectError::Io {
                path: path.clone(),
                source,
            })?;
            let session = Session {
                env: env.clone(),
                target: target.clone(),
                workload: Workload::from_file(path)?,
                // Derived (hack/sieve/*.yaml of the user's own too: a step the user
                // wrote to see a complaint belongs in a unit test, not in this pass).
                complaints: true,
                step_notes: crate::derive::step_notes(&text),
                workload_name: path.display().to_string(),
                timing: pass.timing,
                replay_flags: String::new(),
                jobs: pass.jobs,
                replay_command: Some(Box::new({
                    let (path, out) = (path.clone(), out.clone());
                    move |plan: &str| replay_command(plan, &path, &out)
                })),
            };
            let run_out = out.join(&stem);
            if let Some((plan_id, _)) = &pass.replay {
                let learned = run_out.join("learn");
                let reference = Session::read_learned(&learned)?;
                let plans = crate::plan::plans(&reference.trace);
                let plan = crate::plan::find(&plans, plan_id).ok_or_else(|| {
                    ProjectError::Project(format!(
                        "{} has no plan {plan_id} (its report lists them)",
                        learned.display()
                    ))
                })?;
                let result = session
                    .run_plan(plan, &reference, &learned, &run_out.join("replay"))
                    .await?;
                let text = crate::report::markdown(
                    &target.name,
                    &session.workload_name,
                    std::slice::from_ref(&result),
                );
                println!("{text}");
                return Ok(result.verdict != crate::report::Verdict::Fail);
            }
            let passed = session
                .test(
                    &pass.only,
                    pass.stop_at_first_failure,
                    pass.differential,
                    &run_out,
                )
                .await?;
            all_passed &= passed;
            let report = std::fs::read_to_string(run_out.join("report.md")).unwrap_or_default();
            summary.push_str(&format!(
                "\n{}\n",
                report.replacen("# sieve:", "## sieve:", 1)
            ));
        }
        let path = out.join("report.md");
        std::fs::write(&path, &summary).map_err(|source| ProjectError::Io { path, source })?;
        Ok::<bool, ProjectError>(all_passed)
    })
}

/// PROJECT's `projectName`.
fn project_name(dir: &Path) -> Result<String, ProjectError> {
    let path = dir.join("PROJECT");
    let text = std::fs::read_to_string(&path).map_err(|source| ProjectError::Io {
        path: path.clone(),
        source,
    })?;
    let project: Json = serde_yaml::from_str(&text)
        .map_err(|e| ProjectError::Project(format!("{}: not YAML: {e}", path.display())))?;
    project
        .get("projectName")
        .and_then(Json::as_str)
        .map(str::to_owned)
        .ok_or_else(|| {
            ProjectError::Project(format!(
                "{} has no projectName: is this a kcr project?",
                path.display()
            ))
        })
}

/// The kinds (lower case, as derived workloads are named) of the cluster-scoped CRDs in
/// `files`.
fn cluster_scoped_kinds(files: &[PathBuf]) -> Vec<String> {
    files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|text| {
            serde_yaml::Deserializer::from_str(&text)
                .filter_map(|d| <Json as serde::Deserialize>::deserialize(d).ok())
                .collect::<Vec<_>>()
        })
        .filter(|crd| crd.pointer("/spec/scope").and_then(Json::as_str) == Some("Cluster"))
        .filter_map(|crd| {
            crd.pointer("/spec/names/kind")
                .and_then(Json::as_str)
                .map(str::to_lowercase)
        })
        .collect()
}

/// `cargo build --bin <name>` in `dir`; the binary's path.
fn build_manager(dir: &Path, name: &str) -> Result<PathBuf, ProjectError> {
    let output = Command::new("cargo")
        .args([
            "build",
            "--bin",
            name,
            "--message-format=json-render-diagnostics",
        ])
        .current_dir(dir)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|source| ProjectError::Io {
            path: PathBuf::from("cargo"),
            source,
        })?;
    if !output.status.success() {
        return Err(ProjectError::Command {
            command: format!("cargo build --bin {name}"),
            detail: output.status.to_string(),
        });
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Json>(line).ok())
        .filter(|m| m.pointer("/target/name").and_then(Json::as_str) == Some(name))
        .find_map(|m| {
            m.get("executable")
                .and_then(Json::as_str)
                .map(PathBuf::from)
        })
        .ok_or_else(|| {
            ProjectError::Project(format!("cargo build --bin {name} named no executable"))
        })
}

/// The `.yaml` files of `dir` (none if it does not exist), sorted; `kustomization.yaml`
/// left out.
fn yaml_files(dir: &Path) -> Result<Vec<PathBuf>, ProjectError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "yaml" || e == "yml")
                && p.file_name().is_some_and(|n| n != "kustomization.yaml")
        })
        .collect();
    files.sort();
    Ok(files)
}

/// The kinds the ClusterRole at `role` lets the manager create, outside the project's
/// own groups and the bookkeeping every manager does (Events, Leases, reviews),
/// resolved by discovery.
async fn owned_kinds(env: &Environment, role: &Path) -> Result<Vec<Captured>, ProjectError> {
    let Ok(text) = std::fs::read_to_string(role) else {
        return Ok(Vec::new());
    };
    let role: Json = serde_yaml::from_str(&text)
        .map_err(|e| ProjectError::Project(format!("{}: not YAML: {e}", role.display())))?;
    let mut owned: Vec<Captured> = Vec::new();
    for (group, plural) in creatable(&role) {
        if let Some(captured) = env.cluster.captured_by_plural(&group, &plural).await
            && !owned.contains(&captured)
        {
            owned.push(captured);
        }
    }
    Ok(owned)
}

/// `(group, plural)` of each resource a ClusterRole's rules may create, but the ones
/// every manager writes for itself.
pub fn creatable(role: &Json) -> Vec<(String, String)> {
    const BOOKKEEPING: [&str; 5] = [
        "events",
        "leases",
        "tokenreviews",
        "subjectaccessreviews",
        "selfsubjectaccessreviews",
    ];
    let strings = |v: Option<&Json>| -> Vec<String> {
        v.and_then(Json::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Json::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut found = Vec::new();
    for rule in role
        .get("rules")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
    {
        let verbs = strings(rule.get("verbs"));
        if !verbs.iter().any(|v| v == "create" || v == "*") {
            continue;
        }
        for group in strings(rule.get("apiGroups")) {
            for resource in strings(rule.get("resources")) {
                if !resource.contains('/') && !BOOKKEEPING.contains(&resource.as_str()) {
                    found.push((group.clone(), resource));
                }
            }
        }
    }
    found
}

/// A control plane started for the pass, stopped when dropped.
struct ControlPlane {
    script: PathBuf,
    dir: PathBuf,
    kubectl: PathBuf,
}

impl ControlPlane {
    fn up(script: &Path, dir: &Path) -> Result<Self, ProjectError> {
        let bin_dir = run_script(script, &["bin-dir"], &[])?;
        let _ = run_script(script, &["down", &dir.display().to_string()], &[]);
        eprintln!("kcr sieve: starting a control plane in {}", dir.display());
        run_script(
            script,
            &["up", "--dir", &dir.display().to_string()],
            // A stale-state plan lists at the resourceVersion of a minute ago.
            &[("KUBE_APISERVER_EXTRA_ARGS", "--etcd-compaction-interval=0")],
        )?;
        Ok(Self {
            script: script.to_owned(),
            dir: dir.to_owned(),
            kubectl: PathBuf::from(bin_dir.trim()).join("kubectl"),
        })
    }

    fn kubectl(&self, args: &[&str]) -> Result<(), ProjectError> {
        let output = Command::new(&self.kubectl)
            .arg("--kubeconfig")
            .arg(self.dir.join("kubeconfig"))
            .args(args)
            .output()
            .map_err(|source| ProjectError::Io {
                path: self.kubectl.clone(),
                source,
            })?;
        if output.status.success() {
            return Ok(());
        }
        Err(ProjectError::Command {
            command: format!("kubectl {}", args.join(" ")),
            detail: format!(
                "{}: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ),
        })
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        let _ = run_script(
            &self.script,
            &["down", &self.dir.display().to_string()],
            &[],
        );
    }
}

/// `bash script args...` with `env`; its standard output.
fn run_script(script: &Path, args: &[&str], env: &[(&str, &str)]) -> Result<String, ProjectError> {
    let output = Command::new("bash")
        .arg(script)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .map_err(|source| ProjectError::Io {
            path: script.to_owned(),
            source,
        })?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(10).collect();
    Err(ProjectError::Command {
        command: format!("{} {}", script.display(), args.join(" ")),
        detail: format!(
            "{}: {}",
            output.status,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ),
    })
}

#[cfg(test)]
#[path = "project_tests.rs"]
mod tests;
