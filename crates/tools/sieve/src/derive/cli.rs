//! `sieve derive`: the command line of [`super::derive`], here rather than in the
//! binary so that `main.rs` only dispatches to it.

use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use super::{Depth, DeriveError, DeriveOptions, derive};

/// `sieve derive`'s arguments.
#[derive(Debug, clap::Args)]
#[command(after_long_help = "\
Each sample object gets one workload: create it; for each spec field, updates to other valid
values (each enum member, the bounds and just inside them, a value matching a pattern, a list
grown and shrunk, an optional field set or removed); delete; recreate under the same name.
Each step has a comment naming the field and the value class. Samples whose kind no --crd
defines (a kustomization.yaml) are skipped.

  sieve derive --crd deploy/crds/samplecontroller.k8s.io_foos.yaml \\
      --sample deploy/examples/foo.yaml
  sieve derive --crd testdata/project/deploy/crd/*.yaml \\
      --sample testdata/project/deploy/samples/*.yaml --out target/derived/")]
pub struct DeriveArgs {
    /// Files of CustomResourceDefinitions (apiextensions.k8s.io/v1; several YAML documents
    /// a file, several files); documents of other kinds are ignored.
    #[arg(long, required = true, num_args = 1.., value_name = "FILE")]
    pub crd: Vec<PathBuf>,
    /// Files of sample objects (several YAML documents a file, several files).
    #[arg(long, required = true, num_args = 1.., value_name = "FILE")]
    pub sample: Vec<PathBuf>,
    /// Every value of every field (default: one change per field, at most 8 updates).
    #[arg(long)]
    pub full: bool,
    /// At most this many update steps (create, delete and recreate come on top).
    #[arg(long, value_name = "N")]
    pub max_steps: Option<usize>,
    /// Only the N-th sample object (from 1, in file and document order, counting only
    /// objects of a kind a --crd defines).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub sample_index: Option<u64>,
    /// Where to write: a file for one sample; a directory (existing, or ending in `/`,
    /// and required for several samples) gets `<kind>-<name>.yaml` per sample. Default:
    /// standard output (one sample).
    #[arg(long, value_name = "FILE|DIR")]
    pub out: Option<PathBuf>,
}

/// Why `sieve derive` failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A file is not YAML.
    #[error("{}: not YAML: {source}", path.display())]
    Yaml {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: serde_yaml::Error,
    },
    /// No CustomResourceDefinition in the --crd files.
    #[error("no CustomResourceDefinition in {0}")]
    NoCrd(String),
    /// No sample is of a kind the CRDs define, or --sample-index is past the last one.
    #[error("no sample object {0}")]
    NoSample(String),
    /// Several samples, one output.
    #[error(
        "{} sample objects ({}): pass --sample-index N, or --out DIR/ for one workload each",
        .0.len(), .0.join(", ")
    )]
    Several(Vec<String>),
    /// A workload could not be derived.
    #[error("{sample}: {source}")]
    Derive {
        /// The sample (`Kind name`).
        sample: String,
        /// Why.
        #[source]
        source: DeriveError,
    },
}

/// Every YAML document of `paths` that is a mapping, as JSON.
fn documents(paths: &[PathBuf]) -> Result<Vec<Json>, CliError> {
    let mut out = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(path).map_err(|source| CliError::Io {
            path: path.clone(),
            source,
        })?;
        for document in serde_yaml::Deserializer::from_str(&text) {
            let value: Json =
                serde::Deserialize::deserialize(document).map_err(|source| CliError::Yaml {
                    path: path.clone(),
                    source,
                })?;
            if value.is_object() {
                out.push(value);
            }
        }
    }
    Ok(out)
}

fn text<'v>(value: &'v Json, pointer: &str) -> &'v str {
    value.pointer(pointer).and_then(Json::as_str).unwrap_or("")
}

/// Runs `sieve derive`.
pub fn run(args: &DeriveArgs) -> Result<(), CliError> {
    let joined = |paths: &[PathBuf]| {
        paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let crds: Vec<Json> = documents(&args.crd)?
        .into_iter()
        .filter(|d| text(d, "/kind") == "CustomResourceDefinition")
        .collect();
    if crds.is_empty() {
        return Err(CliError::NoCrd(joined(&args.crd)));
    }
    let crd_of = |sample: &Json| {
        let group = text(sample, "/apiVersion").split('/').next().unwrap_or("");
        crds.iter().find(|crd| {
            text(crd, "/spec/group") == group
                && text(crd, "/spec/names/kind") == text(sample, "/kind")
        })
    };
    let mut samples: Vec<(Json, &Json)> = documents(&args.sample)?
        .into_iter()
        .filter_map(|sample| crd_of(&sample).map(|crd| (sample, crd)))
        .collect();
    let label = |sample: &Json| {
        format!(
            "{} {}",
            text(sample, "/kind"),
            text(sample, "/metadata/name")
        )
    };
    if let Some(n) = args.sample_index {
        let index = usize::try_from(n - 1).unwrap_or(usize::MAX);
        if index >= samples.len() {
            return Err(CliError::NoSample(format!(
                "{n} (there are {})",
                samples.len()
            )));
        }
        samples = vec![samples.swap_remove(index)];
    }
    if samples.is_empty() {
        return Err(CliError::NoSample(format!(
            "in {} of a kind {} defines",
            joined(&args.sample),
            joined(&args.crd)
        )));
    }
    let into_dir = args.out.as_ref().is_some_and(|out| {
        out.is_dir() || out.as_os_str().to_string_lossy().ends_with('/') || samples.len() > 1
    });
    if samples.len() > 1 && !into_dir {
        return Err(CliError::Several(
            samples.iter().map(|(s, _)| label(s)).collect(),
        ));
    }
    let options = DeriveOptions {
        depth: if args.full { Depth::Full } else { Depth::Short },
        max_steps: args.max_steps,
    };
    for (sample, crd) in &samples {
        let derived = derive(crd, sample, &options).map_err(|source| CliError::Derive {
            sample: label(sample),
            source,
        })?;
        let summary = format!(
            "{} steps ({} updates), {} notes on what is not exercised (in its header){}",
            derived.steps.len(),
            derived.steps.len() - 3,
            derived.skipped.len(),
            match derived.left_out {
                0 => String::new(),
                n => format!(", {n} fields beyond --max-steps"),
            }
        );
        match &args.out {
            None => {
                print!("{}", derived.text);
                eprintln!("sieve: derived {}: {summary}", label(sample));
            }
            Some(out) => {
                let path = if into_dir {
                    let file = format!(
                        "{}-{}.yaml",
                        text(sample, "/kind").to_lowercase(),
                        text(sample, "/metadata/name")
                    );
                    out.join(file)
                } else {
                    out.clone()
                };
                write(&path, &derived.text)?;
                eprintln!("sieve: derived {}: {summary}", path.display());
            }
        }
    }
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<(), CliError> {
    let io = |source| CliError::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    std::fs::write(path, text).map_err(io)
}
