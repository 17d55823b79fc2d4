//! `sieve`: Sieve's three perturbations as a command (issue 46). See the `sieve`
//! library's docs; `sieve --help` says what works today.
//!
//! ```text
//! sieve plan --trace learn/trace.jsonl
//! ```
//!
//! Exit code: 0 done, 1 an error (a bad workload or trace, or a step not built yet), 2 bad
//! arguments.

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use clap::{Args, Parser, Subcommand};
use sieve::plan::{self, PlanCounts};
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
custom resources) unperturbed and records the trace; `plan` lists one test per point of
that trace; `run` replays one plan in a fresh namespace and compares its end state and
invariants with the learning run's.

Built today: `plan` (and the workload, trace, diff and invariant code underneath), and
the proxy between the controller and kube-apiserver that records the trace and applies a
plan (a library piece: no command starts it yet). NOT built yet: `learn` and `run` need
the runner (the control plane, the controller behind the proxy, the workload's steps,
quiescence, the kill and restart, the end state); they check their arguments and the
workload, then stop with an error that says so.";

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
    /// NOT BUILT YET (needs the runner; the recording proxy is built): run a workload
    /// unperturbed and record its trace and end state.
    Learn(LearnArgs),
    /// Print the plans of a learning run's trace, each with the command that replays it.
    Plan(PlanArgs),
    /// NOT BUILT YET (needs the runner; the perturbing proxy is built): replay one plan
    /// and compare its end state with the learning run's.
    Run(RunArgs),
}

#[derive(Debug, Args)]
struct LearnArgs {
    /// The workload file (e.g. crates/tools/sieve/workloads/foo.yaml).
    #[arg(long)]
    workload: PathBuf,
    /// The controller to test (e.g. sample-controller).
    #[arg(long)]
    controller: String,
    /// Where to write the trace (trace.jsonl) and the reference end state.
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
    /// The workload file.
    #[arg(long)]
    workload: PathBuf,
    /// The controller to test.
    #[arg(long)]
    controller: String,
    /// The plan's id, as `sieve plan` prints it (e.g. intermediate-3, stale-2).
    #[arg(long)]
    plan: String,
    /// The learning run's trace: checks that it has the plan.
    #[arg(long)]
    trace: Option<PathBuf>,
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Learn(args) => learn(&args),
        Command::Plan(args) => print_plans(&args),
        Command::Run(args) => run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // No backtrace: these are the user's errors (a bad file) or the steps not
            // built yet, not the program's. The crate's errors name their causes.
            eprintln!("sieve: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The error of the steps that are not built yet.
const NOT_BUILT: &str = "needs the runner (not built yet): \
     the proxy that records and perturbs the controller's traffic is built (sieve::proxy), \
     the runner that starts the control plane and the controller behind it and drives the workload is still to be built (issue 46)";

fn learn(args: &LearnArgs) -> anyhow::Result<()> {
    let workload = Workload::from_file(&args.workload)?;
    bail!(
        "sieve learn ({} steps of {} for {}, into {}) {NOT_BUILT}",
        workload.steps.len(),
        args.workload.display(),
        args.controller,
        args.out.display()
    )
}

fn run(args: &RunArgs) -> anyhow::Result<()> {
    Workload::from_file(&args.workload)?;
    if let Some(path) = &args.trace {
        let trace = Trace::from_file(path)?;
        if plan::find(&plan::plans(&trace), &args.plan).is_none() {
            bail!(
                "{} has no plan {} (`sieve plan --trace {}` lists them)",
                path.display(),
                args.plan,
                path.display()
            );
        }
    }
    bail!(
        "sieve run (plan {} of {} for {}) {NOT_BUILT}",
        args.plan,
        args.workload.display(),
        args.controller
    )
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
