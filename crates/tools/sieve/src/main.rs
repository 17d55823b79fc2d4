//! `sieve`: Sieve's three perturbations as a command (issue 46). See the `sieve`
//! library's docs; `sieve --help` says what works today.
//!
//! ```text
//! sieve test --workload crates/tools/sieve/workloads/foo.yaml --controller sample-controller \
//!     --control-plane target/cp --out target/sieve/foo
//! sieve plan --trace target/sieve/foo/learn/trace.jsonl
//! ```
//!
//! Exit code: 0 every plan passed (or was not reached), 1 a plan failed or the learning run
//! is not clean, 2 bad arguments, 3 the run could not be carried out.

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};
use sieve::ignore::IgnoreRule;
use sieve::plan::{self, PlanCounts};
use sieve::report::{self, Verdict};
use sieve::runner::{Environment, Timing};
use sieve::session::Session;
use sieve::target::{self, Captured, Target};
use sieve::trace::Trace;
use sieve::workload::Workload;

/// `--help`'s long text.
const LONG_ABOUT: &str = "\
Tests a Kubernetes controller systematically with Sieve's three perturbations of its view
of the cluster (Sun et al., \"Automatic Reliability Testing for Cluster Management
Controllers\", OSDI 2022), each at every point where it can land:

  intermediate state  after the server answers the controller's k-th write, SIGKILL the
                      controller and start it again (one plan per accepted write);
  unobserved state    withhold one watch event of an object and deliver only its next
                      state (one plan per event that has a later one for the same object);
  stale state         once a workload step is quiescent, restart the controller and serve
                      its initial lists at the resourceVersion it had seen at the end of
                      the previous step, as a lagging API server would (one plan per step
                      after the first).

The flow: `learn` runs a workload (a YAML list of create/update/delete/recreate steps on
custom resources) unperturbed through a recording proxy and keeps its trace and end state;
`plan` lists one test per point of that trace; `run` replays one plan in a fresh namespace
and judges it against the learning run (end state, invariants, liveness, panics); `test`
does all of it and writes a report. `hack/sieve.sh` starts a control plane and runs `test`
on this repository's controllers.

Exit code: 0 every plan passed (or not reached), 1 a plan failed or the learning run is not
clean, 2 bad arguments, 3 the run could not be carried out.";

/// Sieve's perturbations for Kubernetes controllers: crash after each write, a withheld
/// watch event, a lagging API server.
#[derive(Debug, Parser)]
#[command(name = "sieve", version, about, long_about = LONG_ABOUT)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a workload unperturbed and keep its trace and end state (the reference).
    Learn(LearnArgs),
    /// Print the plans of a learning run's trace, each with the command that replays it.
    Plan(PlanArgs),
    /// Replay one plan and judge it against the learning run.
    Run(RunArgs),
    /// Learn, then run every plan (or those of --only), and write the report.
    Test(TestArgs),
    /// Derive workloads from CRDs' OpenAPI schemas and sample objects, as Acto (SOSP'23)
    /// does: every spec field changed to other valid values, delete, recreate.
    Derive(sieve::derive::cli::DeriveArgs),
}

/// What every run needs: the control plane, the controller, the workload.
#[derive(Debug, Args)]
struct Common {
    /// The workload file (e.g. crates/tools/sieve/workloads/foo.yaml).
    #[arg(long)]
    workload: PathBuf,
    /// The controller: a preset (sample-controller, sample-controller-shards: two
    /// replicas in one shard group, vm-controller, myweb-operator,
    /// go-sample-controller; broken-foo-intermediate, broken-foo-unobserved,
    /// broken-foo-stale: a test fixture that is wrong on purpose) or any name with
    /// --command.
    #[arg(long)]
    controller: String,
    /// The controller's command line, split into words as a shell splits them (quotes,
    /// backslashes), with the placeholders {kubeconfig}, {namespace}, {state_dir}, {bin}
    /// (default: the preset's). Each incarnation runs in a process group of its own: a
    /// crash kills the command's children too.
    #[arg(long)]
    command: Option<String>,
    /// A path the end-state comparison ignores, for every kind or one kind:
    /// `.status.server.id`, `Deployment:.status.conditions[*].reason`,
    /// `.metadata.annotations["example.com/synced"]` (repeatable; added to the preset's).
    #[arg(long = "ignore", value_name = "[KIND:]PATH")]
    ignore: Vec<String>,
    /// A file of --ignore rules, one a line, `#` comments.
    #[arg(long, value_name = "FILE")]
    ignore_file: Option<PathBuf>,
    /// Owned kinds captured in the end state besides the workload's, as Kind.group/version
    /// or Kind.version (default: the preset's), e.g. Deployment.apps/v1.
    #[arg(long, value_delimiter = ',')]
    capture: Vec<String>,
    /// The Go sample-controller binary (for the go-sample-controller preset).
    #[arg(long, env = "SIEVE_GO_SAMPLE_CONTROLLER")]
    go_bin: Option<String>,
    /// The control plane's directory (`hack/control-plane.sh up --dir`).
    #[arg(long, env = "SIEVE_CONTROL_PLANE")]
    control_plane: PathBuf,
    /// Where this repository's binaries are ({bin}).
    #[arg(long, env = "SIEVE_BIN_DIR", default_value = "target/debug")]
    bin_dir: PathBuf,
    /// How long nothing must happen for a step to be quiescent, in seconds.
    #[arg(long, default_value_t = 2.0)]
    quiet: f64,
    /// The liveness bound: how long a step may take to be quiescent, in seconds.
    #[arg(long, default_value_t = 60.0)]
    step_bound: f64,
}

#[derive(Debug, Args)]
struct LearnArgs {
    #[command(flatten)]
    common: Common,
    /// Where to write the trace (trace.jsonl), the end state (outcome.json) and the logs.
    #[arg(long)]
    out: PathBuf,
}

#[derive(Debug, Args)]
struct PlanArgs {
    /// The learning run's trace (JSON lines).
    #[arg(long)]
    trace: PathBuf,
    /// The workload the replay commands name (default: the trace's run record).
    #[arg(long)]
    workload: Option<String>,
    /// The controller the replay commands name (default: the trace's run record).
    #[arg(long)]
    controller: Option<String>,
    /// Print one JSON object a line (id, perturbation, point, command) instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct RunArgs {
    #[command(flatten)]
    common: Common,
    /// The plan's id, as `sieve plan` prints it (e.g. intermediate-3, stale-2).
    #[arg(long)]
    plan: String,
    /// The learning run's directory (`sieve learn --out`).
    #[arg(long)]
    learned: PathBuf,
    /// Where to write this run's trace, end state, logs and verdict.
    #[arg(long)]
    out: PathBuf,
}

#[derive(Debug, Args)]
struct TestArgs {
    #[command(flatten)]
    common: Common,
    /// Only these perturbations (intermediate, unobserved, stale).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Stop after the first plan that fails (the report lists the plans run): enough to
    /// show that a controller is caught, e.g. hack/sieve.sh's broken controller.
    #[arg(long)]
    stop_at_first_failure: bool,
    /// How many plans run at once, each in its own namespace with its own controller
    /// (a plan mostly waits for quiescence; a controller that watches every namespace
    /// needs 1).
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// After the plans, Acto's differential oracle: a fresh run that creates each object
    /// at the workload's final spec must reach the learning run's end state.
    #[arg(long)]
    differential: bool,
    /// The controller's own complaints are findings: a Warning Event about a workload
    /// object, or its `Ready` condition `False` once settled, in the learning run (and
    /// the differential run), on a spec the API server accepted. For derived workloads
    /// (`sieve derive`), whose every spec the schema accepts; a hand-written step may send
    /// a bad spec on purpose.
    #[arg(long)]
    complaints: bool,
    /// Where to write the learning run, every plan's run and the report (report.md,
    /// report.json).
    #[arg(long)]
    out: PathBuf,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Plan(args) => print_plans(&args).map(|()| true),
        Command::Derive(args) => sieve::derive::cli::run(&args)
            .map(|()| true)
            .map_err(anyhow::Error::from),
        command => tokio::runtime::Runtime::new()
            .map_err(anyhow::Error::from)
            .and_then(|rt| rt.block_on(run_command(command))),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            // No backtrace: these are the user's errors (a bad file, no control plane),
            // not the program's. The crate's errors name their causes.
            eprintln!("sieve: {e:#}");
            ExitCode::from(3)
        }
    }
}

/// `learn`, `run` and `test`: whether everything passed.
async fn run_command(command: Command) -> anyhow::Result<bool> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    match command {
        Command::Learn(args) => {
            let session = session(&args.common, 1).await?;
            let (_, clean) = session.learn(&args.out).await?;
            Ok(clean)
        }
        Command::Run(args) => {
            // The learning run and the plan first: they need no control plane.
            let reference = Session::read_learned(&args.learned)?;
            let plans = plan::plans(&reference.trace);
            let Some(plan) = plan::find(&plans, &args.plan) else {
                bail!(
                    "{} has no plan {} (`sieve plan --trace {}/trace.jsonl` lists them)",
                    args.learned.display(),
                    args.plan,
                    args.learned.display()
                );
            };
            let session = session(&args.common, 1).await?;
            let result = session
                .run_plan(plan, &reference, &args.learned, &args.out)
                .await?;
            println!(
                "{}",
                report::markdown(
                    &session.target.name,
                    &session.workload_name,
                    std::slice::from_ref(&result)
                )
            );
            Ok(result.verdict != Verdict::Fail)
        }
        Command::Test(args) => {
            let mut session = session(&args.common, args.jobs).await?;
            session.complaints = args.complaints;
            Ok(session
                .test(
                    &args.only,
                    args.stop_at_first_failure,
                    args.differential,
                    &args.out,
                )
                .await?)
        }
        Command::Plan(_) | Command::Derive(_) => unreachable!("handled without a runtime"),
    }
}

/// The session `common` describes: its target (a preset, or `--command`), workload and
/// control plane.
async fn session(common: &Common, jobs: usize) -> anyhow::Result<Session> {
    let workload = Workload::from_file(&common.workload)?;
    let step_notes = std::fs::read_to_string(&common.workload)
        .map(|text| sieve::derive::step_notes(&text))
        .unwrap_or_default();
    let mut target = match target::preset(&common.controller, common.go_bin.as_deref()) {
        Some(t) => t,
        None if common.command.is_some() => Target {
            name: common.controller.clone(),
            command: Vec::new(),
            env: Vec::new(),
            owned: Vec::new(),
            ignore: Vec::new(),
            replicas: 1,
            quiet: None,
        },
        None => bail!(
            "{} is not a preset ({}): give its --command",
            common.controller,
            target::PRESETS.join(", ")
        ),
    };
    if let Some(command) = &common.command {
        target.command = target::split_command(command)
            .filter(|words| !words.is_empty())
            .ok_or_else(|| {
                anyhow::anyhow!("--command {command:?}: empty, or a quote is not closed")
            })?;
    }
    for rule in &common.ignore {
        target.ignore.push(IgnoreRule::parse(rule)?);
    }
    if let Some(file) = &common.ignore_file {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("reading --ignore-file {}", file.display()))?;
        target.ignore.extend(
            IgnoreRule::parse_lines(&text)
                .with_context(|| format!("--ignore-file {}", file.display()))?,
        );
    }
    if !common.capture.is_empty() {
        target.owned = common
            .capture
            .iter()
            .map(|c| {
                Captured::parse(c)
                    .ok_or_else(|| anyhow::anyhow!("--capture {c}: want Kind.group/version"))
            })
            .collect::<anyhow::Result<_>>()?;
    }
    let env =
        Environment::open(&common.control_plane, std::path::absolute(&common.bin_dir)?).await?;
    Ok(Session {
        env,
        target,
        workload,
        workload_name: common.workload.display().to_string(),
        timing: Timing {
            quiet: Duration::from_secs_f64(common.quiet),
            step_bound: Duration::from_secs_f64(common.step_bound),
        },
        replay_flags: replay_flags(common),
        jobs,
        replay_command: None,
        complaints: false,
        step_notes,
    })
}

/// ` --command '...' --capture ... --ignore '...'`: what [`Session::replay_flags`] holds.
fn replay_flags(common: &Common) -> String {
    let mut words: Vec<String> = Vec::new();
    if let Some(command) = &common.command {
        words.extend(["--command".to_owned(), command.clone()]);
    }
    if !common.capture.is_empty() {
        words.extend(["--capture".to_owned(), common.capture.join(",")]);
    }
    for rule in &common.ignore {
        words.extend(["--ignore".to_owned(), rule.clone()]);
    }
    if let Some(file) = &common.ignore_file {
        words.extend(["--ignore-file".to_owned(), file.display().to_string()]);
    }
    words
        .iter()
        .map(|w| format!(" {}", shlex::try_quote(w).unwrap_or_else(|_| w.into())))
        .collect()
}

fn print_plans(args: &PlanArgs) -> anyhow::Result<()> {
    let trace = Trace::from_file(&args.trace)?;
    let recorded = trace.run();
    let workload = args.workload.as_deref().or(recorded.map(|(w, _)| w));
    let controller = args.controller.as_deref().or(recorded.map(|(_, c)| c));
    let (Some(workload), Some(controller)) = (workload, controller) else {
        bail!(
            "{} has no run record: pass --workload and --controller for the replay commands",
            args.trace.display()
        );
    };
    let plans = plan::plans(&trace);
    if args.json {
        for plan in &plans {
            let line = serde_json::json!({
                "id": plan.id,
                "perturbation": plan.perturbation,
                "point": plan.point,
                "command": plan.command(workload, controller),
            });
            println!("{line}");
        }
        return Ok(());
    }
    println!(
        "{}: {} records, {} writes, {} watch events",
        args.trace.display(),
        trace.records.len(),
        trace.writes().count(),
        trace.watch_events().count()
    );
    println!("{}", PlanCounts::of(&plans));
    for plan in &plans {
        println!(
            "\n{}\n  {}\n  {}",
            plan.id,
            plan.point,
            plan.command(workload, controller)
        );
    }
    Ok(std::io::Write::flush(&mut std::io::stdout())?)
}
