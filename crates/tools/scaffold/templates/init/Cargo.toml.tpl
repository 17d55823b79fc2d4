# Scaffolded by `kcr init --domain {{domain}} --repo {{repo}} --project-name {{project_name}}`.
# `kcr create api` and `kcr create webhook` add to src/ (look for the `+kcr:scaffold:`
# markers); this file changes only when you add dependencies.
[package]
name = "{{project_name}}"
version = "0.1.0"
edition = "2024"
publish = false
# `cargo run` runs the manager (the project has a second binary, `manifests`).
default-run = "{{project_name}}"

# Its own workspace: the project builds on its own, wherever it lives.
[workspace]

# The library holds everything (API types, controllers, webhooks), so the binaries and
# the tests share it.
[lib]
path = "src/lib.rs"

# The manager: every controller and webhook of the project in one process.
[[bin]]
name = "{{project_name}}"
path = "src/main.rs"

# Writes deploy/crd/*.yaml and deploy/rbac/role.yaml from the Rust types
# (`cargo run --bin manifests`; `-- --check` fails when they are stale).
[[bin]]
name = "manifests"
path = "src/bin/manifests.rs"

[[test]]
name = "e2e"
path = "tests/e2e/main.rs"

# Every public item documented, no `unsafe`, no `unwrap()` outside tests
# (clippy.toml allows it in tests: there an unwrap is the assertion).
[lints.rust]
missing_docs = "warn"
unsafe_code = "forbid"

[lints.clippy]
unwrap_used = "warn"

[dependencies]
# The kube-controllers-rs runtime: client-go's machinery and controller-runtime's
# manager, builder and webhooks.
kcr-manager = {{dep_manager}}
kcr-builder = {{dep_builder}}
kcr-controller = {{dep_controller}}
kcr-cache = {{dep_cache}}
kcr-record = {{dep_record}}
kcr-webhook = {{dep_webhook}}
kcr-gentype = {{dep_gentype}}
# The Kubernetes client (HTTP, auth, #[derive(CustomResource)]) and the API types.
kube = { version = "5.0.0", default-features = false, features = ["client", "derive", "rustls-tls", "ring"] }
# `schemars`: the JSON schema of metav1.Condition, embedded in the CRDs.
k8s-openapi = { version = "0.29.0", default-features = false, features = ["std", "v1_37", "schemars"] }
schemars = "1"
serde = { version = "1", features = ["derive"] }
serde_json = "1"
serde_yaml = "0.9"
tokio = { version = "1.54", features = ["rt", "rt-multi-thread", "macros", "sync", "time", "signal"] }
clap = { version = "4.6", features = ["derive", "env"] }
anyhow = "1"
thiserror = "2"
tracing = "0.1"

[dev-dependencies]
# The test doubles: FakeApi (a recording API server) and FakeRecorder (Events).
kcr-controller = {{dep_controller_testing}}
kcr-record = {{dep_record_testing}}
# A real control plane for the e2e tests (envtest's analogue).
kcr-testenv = {{dep_testenv}}
# The manager's shutdown signal in the e2e tests.
tokio-util = "0.7"
