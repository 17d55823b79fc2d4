//! `kcr sieve`: the flags of the perturbation pass; the pass itself is
//! `sieve::project` (crates/tools/sieve/src/project.rs).

use std::path::PathBuf;

use clap::Args;
use sieve::derive::Depth;
use sieve::project::ProjectPass;
use sieve::runner::Timing;

/// `kcr sieve`'s flags.
#[derive(Debug, Args)]
pub struct SieveArgs {
    /// The project's root.
    #[arg(long, default_value = ".")]
    dir: PathBuf,
    /// Where the derived workloads, every run and report.md go.
    #[arg(long, default_value = "target/sieve")]
    out: PathBuf,
    /// Every value of every spec field (default: a short pass, one change per field, at
    /// most --max-updates changes per sample).
    #[arg(long)]
    full: bool,
    /// At most this many spec changes per sample's workload.
    #[arg(long, env = "KCR_SIEVE_MAX_UPDATES")]
    max_updates: Option<usize>,
    /// Plans at once, each in its own namespace with its own manager. A plan mostly
    /// waits for the cluster to go quiet: on 2 cores the short pass of testdata/project
    /// took 277 s at 4 and 176 s at 8, every plan passing both times.
    #[arg(long, env = "KCR_SIEVE_JOBS", default_value_t = 8)]
    jobs: usize,
    /// Only these perturbations: intermediate, unobserved, stale (`--only none`: the
    /// differential oracle alone).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Start no plan after one failed: enough to show that a bug is caught.
    #[arg(long)]
    stop_at_first_failure: bool,
    /// Skip the differential oracle (a fresh object at the final spec must reach the
    /// same state as the sequence of changes).
    #[arg(long)]
    no_differential: bool,
    /// Replay one plan of an earlier pass into the same --out (its report prints the
    /// command): its id.
    #[arg(long, requires = "workload")]
    replay: Option<String>,
    /// The workload of the plan to replay (a file under <out>/workloads, or your own).
    #[arg(long)]
    workload: Option<PathBuf>,
}

/// Runs the pass: `Ok(true)` if every plan and oracle passed.
pub fn run(args: SieveArgs) -> anyhow::Result<bool> {
    let script = scaffold::envtest::control_plane_script(&args.dir).ok_or_else(|| {
        anyhow::anyhow!(
            "kcr sieve needs a checkout of kube-controllers-rs (its hack/control-plane.sh), as kcr envtest does"
        )
    })?;
    // The control plane's binaries: built (or found in the cache) as `kcr envtest` does.
    scaffold::envtest::envtest(&args.dir)?;
    let pass = ProjectPass {
        out: if args.out.is_absolute() {
            args.out
        } else {
            args.dir.join(args.out)
        },
        project_dir: args.dir,
        control_plane_script: script,
        depth: if args.full { Depth::Full } else { Depth::Short },
        max_updates: args.max_updates,
        jobs: args.jobs,
        only: args.only,
        differential: !args.no_differential,
        stop_at_first_failure: args.stop_at_first_failure,
        timing: Timing::default(),
        replay: args.replay.zip(args.workload),
    };
    Ok(sieve::project::run(&pass)?)
}
