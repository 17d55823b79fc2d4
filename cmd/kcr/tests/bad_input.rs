//! Every refusal of `kcr`: the message names the flag (or file) and the rule, and the
//! command wrote nothing.

mod support;

use std::path::PathBuf;
use std::process::Command;

use support::{TempDir, kcr, project, refused};

#[test]
fn a_group_that_is_not_a_dns_subdomain() {
    let dir = project();
    refused(
        &dir.0,
        &[
            "create",
            "api",
            "--group",
            "Web_App",
            "--version",
            "v1",
            "--kind",
            "Blog",
        ],
        &["invalid --group \"Web_App\"", "DNS subdomain"],
    );
}

#[test]
fn a_kind_that_is_not_upper_camel_case() {
    let dir = project();
    refused(
        &dir.0,
        &[
            "create",
            "api",
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            "blog_post",
        ],
        &["invalid --kind \"blog_post\"", "UpperCamelCase"],
    );
}

#[test]
fn a_version_that_is_not_a_kubernetes_version() {
    let dir = project();
    for version in ["1", "v1.2", "v1gamma1", "V1"] {
        refused(
            &dir.0,
            &[
                "create",
                "api",
                "--group",
                "webapp",
                "--version",
                version,
                "--kind",
                "Blog",
            ],
            &[&format!("invalid --version {version:?}"), "v<N>beta<M>"],
        );
    }
}

/// Kinds whose project would not compile: a name the generated code imports or
/// declares (E0252, E0255), one of Rust's prelude, a Rust keyword as the module name.
/// Each is refused with the reason, not with rustfmt's errors, and nothing is written.
#[test]
fn a_kind_the_generated_code_cannot_use() {
    let dir = project();
    for (kind, image, reason) in [
        ("Error", false, "already uses the name Error"),
        ("Option", false, "Rust's prelude"),
        (
            "Condition",
            false,
            "already uses the name Condition (imported from k8s_openapi::",
        ),
        (
            "Request",
            false,
            "already uses the name Request (imported from builder::Request)",
        ),
        (
            "Deployment",
            true,
            "imported from k8s_openapi::api::apps::v1::Deployment",
        ),
        ("Type", false, "Type is a reserved word in Rust"),
        ("Self", false, "Self is a reserved word in Rust"),
        ("Crate", false, "Crate is a reserved word in Rust"),
    ] {
        let mut args = vec![
            "create",
            "api",
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            kind,
        ];
        if image {
            args.extend(["--image", "nginx:1.27"]);
        }
        let message = format!("invalid --kind {kind:?}");
        refused(
            &dir.0,
            &args,
            &[&message, reason, "choose another kind name"],
        );
        let (_, err) = kcr(&dir.0, &args);
        assert!(!err.contains("rustfmt"), "{kind}: {err}");
    }
}

#[test]
fn a_kind_that_exists() {
    let dir = project();
    refused(
        &dir.0,
        &[
            "create",
            "api",
            "--group",
            "other",
            "--version",
            "v2",
            "--kind",
            "Guestbook",
        ],
        &["kind Guestbook already exists", "webapp.my.domain/v1"],
    );
}

#[test]
fn create_outside_a_project() {
    let dir = TempDir::new("empty");
    refused(
        &dir.0,
        &[
            "create",
            "api",
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            "Guestbook",
        ],
        &["no PROJECT file", "kcr init"],
    );
    refused(
        &dir.0,
        &[
            "create",
            "webhook",
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            "Guestbook",
            "--defaulting",
        ],
        &["no PROJECT file"],
    );
}

#[test]
fn init_in_a_non_empty_directory_unless_forced() {
    let dir = TempDir::new("nonempty");
    std::fs::write(dir.0.join("notes.txt"), "mine").expect("test setup");
    let args = [
        "init",
        "--domain",
        "my.domain",
        "--repo",
        "my.domain/x",
        "--project-name",
        "x",
    ];
    refused(&dir.0, &args, &["is not empty (notes.txt)", "--force"]);
    let (_, err) = kcr(&dir.0, &args);
    assert!(
        !err.contains("others"),
        "one file is not 'and others': {err}"
    );
    std::fs::write(dir.0.join("todo.txt"), "mine too").expect("test setup");
    refused(&dir.0, &args, &["is not empty (notes.txt and 1 other)"]);
    let (ok, err) = kcr(&dir.0, &[&args[..], &["--force"]].concat());
    assert!(ok, "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.0.join("notes.txt")).expect("test setup"),
        "mine"
    );
    assert!(dir.0.join("PROJECT").is_file());
    // A second init over the project is refused, forced or not.
    refused(
        &dir.0,
        &[&args[..], &["--force"]].concat(),
        &["already holds a project"],
    );
}

#[test]
fn bad_init_flags() {
    let dir = TempDir::new("init");
    refused(
        &dir.0,
        &["init", "--domain", "My.Domain", "--repo", "r"],
        &["invalid --domain \"My.Domain\"", "DNS subdomain"],
    );
    refused(
        &dir.0,
        &[
            "init",
            "--domain",
            "my.domain",
            "--repo",
            "r",
            "--project-name",
            "Guest_Book",
        ],
        &["invalid --project-name \"Guest_Book\"", "DNS label"],
    );
}

#[test]
fn webhook_flags() {
    let dir = project();
    refused(
        &dir.0,
        &[
            "create",
            "webhook",
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            "Guestbook",
        ],
        &["--defaulting", "--programmatic-validation"],
    );
    refused(
        &dir.0,
        &[
            "create",
            "webhook",
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            "Blog",
            "--defaulting",
        ],
        &[
            "no kind Blog",
            "kcr create api --group webapp --version v1 --kind Blog",
        ],
    );
    let (ok, err) = kcr(
        &dir.0,
        &[
            "create",
            "webhook",
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            "Guestbook",
            "--defaulting",
        ],
    );
    assert!(ok, "{err}");
    refused(
        &dir.0,
        &[
            "create",
            "webhook",
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            "Guestbook",
            "--programmatic-validation",
        ],
        &[
            "Guestbook already has a webhook",
            "src/webhook/guestbook.rs",
        ],
    );
}

#[test]
fn a_cluster_scoped_kind_cannot_deploy_an_image() {
    let dir = project();
    refused(
        &dir.0,
        &[
            "create",
            "api",
            "--group",
            "cache",
            "--version",
            "v1",
            "--kind",
            "Memcached",
            "--namespaced",
            "false",
            "--image",
            "memcached:1.6",
        ],
        &[
            "--image with --namespaced false",
            "create the kind namespaced",
        ],
    );
}

#[test]
fn image_flags() {
    let dir = project();
    refused(
        &dir.0,
        &[
            "create",
            "api",
            "--group",
            "cache",
            "--version",
            "v1",
            "--kind",
            "Memcached",
            "--image",
            "Memcached:1",
        ],
        &["invalid --image \"Memcached:1\""],
    );
    refused(
        &dir.0,
        &[
            "create",
            "api",
            "--group",
            "cache",
            "--version",
            "v1",
            "--kind",
            "Memcached",
            "--image-container-port",
            "11211",
        ],
        &["--image-container-port", "pass --image too"],
    );
    // clap's own range is the rule: 1 to 65535, not 0..=65535 and then a refusal of 0.
    for port in ["0", "65536"] {
        refused(
            &dir.0,
            &[
                "create",
                "api",
                "--group",
                "cache",
                "--version",
                "v1",
                "--kind",
                "Memcached",
                "--image",
                "memcached:1.6",
                "--image-container-port",
                port,
            ],
            &[&format!("{port} is not in 1..=65535")],
        );
    }
}

#[test]
fn an_edited_file_is_never_overwritten() {
    let dir = project();
    // A file the command would create, written by hand.
    std::fs::create_dir_all(dir.0.join("src/controller")).expect("test setup");
    std::fs::write(
        dir.0.join("src/controller/blog.rs"),
        "// my own blog controller\n",
    )
    .expect("test setup");
    refused(
        &dir.0,
        &[
            "create",
            "api",
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            "Blog",
        ],
        &["refusing to overwrite", "src/controller/blog.rs"],
    );
    std::fs::remove_file(dir.0.join("src/controller/blog.rs")).expect("test setup");

    // A file the command adds a line to, whose marker the user removed.
    let main = dir.0.join("src/main.rs");
    let edited = std::fs::read_to_string(&main)
        .expect("test setup")
        .replace("// +kcr:scaffold:controllers", "// my controllers");
    std::fs::write(&main, &edited).expect("test setup");
    refused(
        &dir.0,
        &[
            "create",
            "api",
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            "Blog",
        ],
        &[
            "refusing to edit",
            "src/main.rs",
            "// +kcr:scaffold:controllers",
        ],
    );
    assert_eq!(std::fs::read_to_string(&main).expect("test setup"), edited);
}

#[test]
fn a_second_kind_changes_nothing_of_the_first() {
    let dir = project();
    let first: Vec<PathBuf> = [
        "src/api/guestbook_v1.rs",
        "src/controller/guestbook.rs",
        "tests/e2e/guestbook.rs",
        "deploy/samples/webapp_v1_guestbook.yaml",
    ]
    .iter()
    .map(|p| dir.0.join(p))
    .collect();
    let before: Vec<Vec<u8>> = first
        .iter()
        .map(|p| std::fs::read(p).expect("test setup"))
        .collect();
    let (ok, err) = kcr(
        &dir.0,
        &[
            "create",
            "api",
            "--group",
            "webapp",
            "--version",
            "v1",
            "--kind",
            "Blog",
        ],
    );
    assert!(ok, "{err}");
    let after: Vec<Vec<u8>> = first
        .iter()
        .map(|p| std::fs::read(p).expect("test setup"))
        .collect();
    assert!(
        before == after,
        "the second create api changed the first kind's files"
    );
    let main = std::fs::read_to_string(dir.0.join("src/main.rs")).expect("test setup");
    assert!(
        main.contains("controller::guestbook::setup(mgr)?;"),
        "{main}"
    );
    assert!(main.contains("controller::blog::setup(mgr)?;"), "{main}");
}

#[test]
fn help_lists_every_command_with_an_example() {
    let output = Command::new(env!("CARGO_BIN_EXE_kcr"))
        .arg("--help")
        .output()
        .expect("test setup");
    let help = String::from_utf8_lossy(&output.stdout);
    for needle in [
        "init",
        "create",
        "envtest",
        "kcr init --domain",
        "kcr create api --group",
        "kcr create webhook",
        "kcr envtest",
    ] {
        assert!(
            help.contains(needle),
            "kcr --help lacks {needle:?}:\n{help}"
        );
    }
}
