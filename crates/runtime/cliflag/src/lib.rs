//! Command-line flag values written the way Kubernetes' Go components read them:
//! this workspace's `k8s.io/component-base/cli/flag` (imported in Go as `cliflag`).
//!
//! A Go controller's duration flags (`--leader-elect-lease-duration=15s`,
//! `--resync-period=1m30s`) go through Go's `time.ParseDuration`; clap has no such
//! parser, so [`parse_duration`] is one, used as a clap `value_parser` by every
//! duration flag and environment variable of the workspace: the manager's
//! (`--resync-period`, `--freshness-timeout`), leader election's (`--leader-elect-*`),
//! the VirtualMachine controller's (`--usage-period`) and the chaos soak's.
//!
//! # Why a crate of its own
//!
//! The parser used to live in the `leaderelection` crate, whose flags needed it first.
//! But it is not about leader election, and the crates that need it sit on both sides
//! of it: `manager` depends on `leaderelection`, and both parse durations. A tiny crate
//! at the bottom of the runtime, with no dependency but `thiserror`, is the one place
//! every flag-reading crate (and the fuzz target `go_duration`) can use without a
//! dependency cycle and without pulling in a Kubernetes client.
//!
//! ```
//! use std::time::Duration;
//! use clap::Parser;
//!
//! #[derive(Parser)]
//! struct Cli {
//!     /// How often to resync. Go duration syntax: 30s, 1m.
//!     #[arg(long, default_value = "30s", value_parser = cliflag::parse_duration)]
//!     resync_period: Duration,
//! }
//!
//! let cli = Cli::parse_from(["my-controller", "--resync-period", "1m30s"]);
//! assert_eq!(cli.resync_period, Duration::from_secs(90));
//! assert!(Cli::try_parse_from(["my-controller", "--resync-period", "90"]).is_err());
//! ```
#![forbid(unsafe_code)]

pub mod duration;

pub use duration::{ParseDurationError, parse_duration};
