//! `--help` of a manager binary, as a kcr project's user reads it: every flag's text
//! is plain text about the binary, not rustdoc syntax or this repository's paths.

use clap::{CommandFactory, Parser};

/// A binary with the manager's flags, as a kcr project's `src/main.rs` has them.
#[derive(Debug, Parser)]
#[command(name = "operator")]
struct Cli {
    #[command(flatten)]
    manager: manager::ManagerArgs,
}

#[test]
fn the_help_has_no_rustdoc_links_or_repository_paths() {
    let help = Cli::command().render_long_help().to_string();
    for line in help.lines() {
        assert!(
            !line.contains("[`") && !line.contains("]("),
            "a rustdoc link in --help: {line}"
        );
        assert!(
            !line.contains("deploy/*/") && !line.contains("deploy/ manifests"),
            "a path of this repository in --help: {line}"
        );
    }
    assert!(help.contains("--events-api"), "{help}");
}
