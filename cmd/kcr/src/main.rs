//! `kcr`: kubebuilder's workflow on this repository's runtime. It only wires flags to
//! the `scaffold` crate, which writes the files.
//!
//! ```text
//! kcr init --domain my.domain --repo my.domain/guestbook
//! kcr create api --group webapp --version v1 --kind Guestbook
//! kcr create api --group cache --version v1alpha1 --kind Memcached --image memcached:1.6-alpine --image-container-port 11211
//! kcr create webhook --group webapp --version v1 --kind Guestbook --defaulting --programmatic-validation
//! eval "$(kcr envtest)"   # the control plane for the project's e2e tests
//! ```

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{ArgGroup, Args, Parser, Subcommand};

mod sieve_pass;
use scaffold::{ApiOptions, Applied, InitOptions, RuntimeSource, WebhookOptions};

/// Scaffold a Kubernetes operator on the kube-controllers-rs runtime, as kubebuilder does
/// for controller-runtime.
#[derive(Debug, Parser)]
#[command(
    name = "kcr",
    version,
    about = "Scaffold a Kubernetes operator on the kube-controllers-rs runtime, as kubebuilder does for controller-runtime",
    after_help = EXAMPLES
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

const EXAMPLES: &str = "Examples:
  kcr init --domain my.domain --repo my.domain/guestbook
  kcr create api --group webapp --version v1 --kind Guestbook
  kcr create api --group cache --version v1alpha1 --kind Memcached --image memcached:1.6-alpine --image-container-port 11211
  kcr create webhook --group webapp --version v1 --kind Guestbook --defaulting --programmatic-validation
  eval \"$(kcr envtest)\" && cargo test";

#[derive(Debug, Subcommand)]
enum Command {
    /// A new project: Cargo workspace, main.rs on the manager, deploy/, Dockerfile,
    /// README, hack/test.sh, PROJECT.
    #[command(after_help = "Example:\n  kcr init --domain my.domain --repo my.domain/guestbook")]
    Init(InitArgs),
    /// Add to a project: `kcr create api`, `kcr create webhook`.
    #[command(subcommand)]
    Create(Create),
    /// Build (or find in the cache) the control plane the project's e2e tests run on;
    /// prints the `export` line for kcr-testenv.
    #[command(after_help = "Example:\n  eval \"$(kcr envtest)\" && cargo test")]
    Envtest {
        /// The project's root.
        #[arg(long, default_value = ".")]
        dir: PathBuf,
    },
    /// Test the project's controllers with Sieve's perturbations (a crash after each
    /// write, each watch event withheld, a restart onto a lagging API server) and Acto's
    /// differential oracle, on workloads derived from its samples and CRD schemas, on a
    /// control plane of its own; exit 1 if a plan fails.
    #[command(
        after_help = "Example:\n  kcr sieve                 # the short pass (hack/test.sh runs it)\n  kcr sieve --full          # every value of every spec field\n  kcr sieve --replay intermediate-3 --workload target/sieve/workloads/memcached-memcached-sample.yaml"
    )]
    Sieve(sieve_pass::SieveArgs),
}

#[derive(Debug, Subcommand)]
enum Create {
    /// A kind: its types, a controller, RBAC, tests and a sample.
    #[command(
        after_help = "Examples:\n  kcr create api --group webapp --version v1 --kind Guestbook\n  kcr create api --group cache --version v1alpha1 --kind Memcached --image memcached:1.6-alpine --image-container-port 11211"
    )]
    Api(ApiArgs),
    /// A kind's defaulting and/or validating admission webhook.
    #[command(
        after_help = "Example:\n  kcr create webhook --group webapp --version v1 --kind Guestbook --defaulting --programmatic-validation"
    )]
    Webhook(WebhookArgs),
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("runtime").args(["runtime_path", "runtime_git", "runtime_version"])))]
struct InitArgs {
    /// The domain of the project's API groups (`<group>.<domain>`).
    #[arg(long)]
    domain: String,
    /// Where the project lives, e.g. my.domain/guestbook (names its image).
    #[arg(long)]
    repo: String,
    /// The project's name (crate, binary, namespace); default: the directory's name.
    #[arg(long)]
    project_name: Option<String>,
    /// Take the runtime crates from this kube-controllers-rs checkout (default: the
    /// one this kcr was built from).
    #[arg(long, value_name = "PATH")]
    runtime_path: Option<String>,
    /// Take the runtime crates from this git repository...
    #[arg(long, value_name = "URL", requires = "runtime_rev")]
    runtime_git: Option<String>,
    /// ...at this revision.
    #[arg(long, value_name = "REV", requires = "runtime_git")]
    runtime_rev: Option<String>,
    /// Take the runtime crates from crates.io at this version.
    #[arg(long, value_name = "VERSION")]
    runtime_version: Option<String>,
    /// Write into a directory that holds other files (never over one of them).
    #[arg(long)]
    force: bool,
    /// The project's directory.
    #[arg(long, default_value = ".")]
    dir: PathBuf,
}

/// The kind a `create` command is about: `--group`, `--version`, `--kind`.
#[derive(Debug, Args)]
struct KindArgs {
    /// The group's short name: the API group is `<group>.<domain>`.
    #[arg(long)]
    group: String,
    /// The version, e.g. v1, v1beta1.
    #[arg(long)]
    version: String,
    /// The kind, UpperCamelCase.
    #[arg(long)]
    kind: String,
}

#[derive(Debug, Args)]
struct ApiArgs {
    #[command(flatten)]
    kind: KindArgs,
    /// Namespaced (true) or cluster-scoped (false).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    namespaced: bool,
    /// Scaffold the types.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    resource: bool,
    /// Scaffold a controller.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    controller: bool,
    /// The controller runs this image in a Deployment it owns (kubebuilder's
    /// deploy-image plugin).
    #[arg(long)]
    image: Option<String>,
    /// The image's container port (with --image; default 80).
    #[arg(long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    image_container_port: Option<u16>,
    /// The project's root.
    #[arg(long, default_value = ".")]
    dir: PathBuf,
}

#[derive(Debug, Args)]
struct WebhookArgs {
    #[command(flatten)]
    kind: KindArgs,
    /// A mutating webhook that fills defaults.
    #[arg(long)]
    defaulting: bool,
    /// A validating webhook.
    #[arg(long)]
    programmatic_validation: bool,
    /// The project's root.
    #[arg(long, default_value = ".")]
    dir: PathBuf,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::Sieve(args) = cli.command {
        return match sieve_pass::run(args) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::FAILURE,
            Err(e) => {
                eprintln!("kcr sieve: {e:#}");
                ExitCode::from(3)
            }
        };
    }
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kcr: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> Result<(), scaffold::ScaffoldError> {
    match command {
        Command::Init(args) => {
            let runtime = match (
                args.runtime_path,
                args.runtime_git,
                args.runtime_rev,
                args.runtime_version,
            ) {
                (Some(path), ..) => RuntimeSource::Path(path),
                (None, Some(url), Some(rev), _) => RuntimeSource::Git { url, rev },
                (None, None, _, Some(version)) => RuntimeSource::Version(version),
                _ => match scaffold::source_repository() {
                    Some(repo) => RuntimeSource::Path(repo.display().to_string()),
                    None => RuntimeSource::Version(env!("CARGO_PKG_VERSION").to_owned()),
                },
            };
            let applied = scaffold::init(&InitOptions {
                dir: args.dir,
                domain: args.domain,
                repo: args.repo,
                project_name: args.project_name,
                runtime,
                force: args.force,
            })?;
            report(
                &applied,
                "Next: kcr create api --group <group> --version <version> --kind <Kind>",
            );
        }
        Command::Create(Create::Api(args)) => {
            let applied = scaffold::create_api(&ApiOptions {
                dir: args.dir,
                group: args.kind.group,
                version: args.kind.version,
                kind: args.kind.kind,
                namespaced: args.namespaced,
                resource: args.resource,
                controller: args.controller,
                image: args.image,
                container_port: args.image_container_port,
            })?;
            report(
                &applied,
                "Next: cargo run --bin manifests (the CRD and RBAC), then bash hack/test.sh",
            );
        }
        Command::Create(Create::Webhook(args)) => {
            let applied = scaffold::create_webhook(&WebhookOptions {
                dir: args.dir,
                group: args.kind.group,
                version: args.kind.version,
                kind: args.kind.kind,
                defaulting: args.defaulting,
                validation: args.programmatic_validation,
            })?;
            report(&applied, "Next: bash hack/test.sh");
        }
        Command::Envtest { dir } => print!("{}", scaffold::envtest::envtest(&dir)?),
        Command::Sieve(_) => unreachable!("handled in main"),
    }
    Ok(())
}

fn report(applied: &Applied, next: &str) {
    for path in &applied.created {
        eprintln!("created {path}");
    }
    for path in &applied.updated {
        eprintln!("updated {path}");
    }
    eprintln!("{next}");
}
