//! `chaos`: the chaos soak. See the `chaos` library's docs and docs/reliability.md;
//! `hack/chaos.sh` is the usual way to run it.
//!
//! ```text
//! chaos --control-plane /tmp/cp --out /tmp/soak --duration 30m --seed 42
//! ```
//!
//! Exit code: 0 pass, 1 invariant violations, 2 the environment broke (no violation),
//! 3 the soak could not run.

#![forbid(unsafe_code)]

use clap::Parser;

/// The chaos soak: controllers under overlapping faults and load.
#[derive(Debug, Parser)]
#[command(name = "chaos", version, about)]
struct Cli {
    #[command(flatten)]
    soak: chaos::SoakArgs,
}

fn main() {
    let cli = Cli::parse();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,kube_client=off"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let out = cli.soak.out.clone();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("chaos: starting the runtime: {e}");
            std::process::exit(3);
        }
    };
    match runtime.block_on(chaos::run(cli.soak)) {
        Ok(summary) => {
            print!("{}", summary.text());
            println!("summary: {}", out.join("summary.txt").display());
            std::process::exit(summary.exit_code());
        }
        Err(e) => {
            eprintln!("chaos: {e}");
            std::process::exit(3);
        }
    }
}
