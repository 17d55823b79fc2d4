//! `crdgen`: writes every CustomResourceDefinition of `crates/controllers/apis` to a
//! directory, one kubebuilder-named YAML file per CRD.
//!
//! ```text
//! crdgen --out-dir deploy/crds           # (re)write the files
//! crdgen --out-dir deploy/crds --check   # exit 1 if any file is missing or stale
//! ```
//!
//! It is deliberately thin: the CRDs and their rendering live in the `apis`
//! crate ([`apis::crd_files`]), where they are tested. Run it through
//! `hack/update-crds.sh`; `hack/verify-crds.sh` checks the result.

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;

/// Command-line flags.
#[derive(Debug, Parser)]
#[command(
    name = "crdgen",
    version,
    about = "Write the CRDs of crates/controllers/apis as YAML files"
)]
struct Args {
    /// Directory to write `<group>_<plural>.yaml` files to.
    #[arg(long, default_value = "deploy/crds")]
    out_dir: PathBuf,

    /// Write nothing; exit 1 if a file in --out-dir is missing or differs.
    #[arg(long)]
    check: bool,
}

fn main() -> anyhow::Result<ExitCode> {
    let args = Args::parse();
    let files = apis::crd_files().context("rendering the CRDs as YAML")?;
    if args.check {
        let mut stale = Vec::new();
        for (name, contents) in &files {
            let path = args.out_dir.join(name);
            match std::fs::read_to_string(&path) {
                Ok(existing) if existing == *contents => {}
                Ok(_) => stale.push(format!("{} differs", path.display())),
                Err(e) => stale.push(format!("{}: {e}", path.display())),
            }
        }
        if stale.is_empty() {
            return Ok(ExitCode::SUCCESS);
        }
        for line in &stale {
            eprintln!("crdgen: {line}");
        }
        eprintln!("crdgen: CRDs are stale; run hack/update-crds.sh");
        return Ok(ExitCode::FAILURE);
    }
    std::fs::create_dir_all(&args.out_dir)
        .with_context(|| format!("creating {}", args.out_dir.display()))?;
    for (name, contents) in &files {
        let path = args.out_dir.join(name);
        std::fs::write(&path, contents).with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
