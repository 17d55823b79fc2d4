[package]
name = "{{project_name}}"
description = "The {{project_name}} operator, scaffolded by kcr on the kube-controllers-rs runtime."
version = "0.1.0"
edition = "2024"
rust-version = "1.89"
publish = false

# A workspace of its own, wherever the directory lives.
[workspace]

[[bin]]
name = "{{project_name}}"
path = "src/main.rs"
doc = false

# Writes the CRDs and the manager's ClusterRole from the code: `cargo run --bin manifests`.
[[bin]]
name = "manifests"
path = "src/bin/manifests.rs"
doc = false

[lints.rust]
missing_docs = "warn"
unsafe_code = "forbid"

[lints.clippy]
unwrap_used = "warn"

[dependencies]
# The runtime: client-go's informers, work queue and sync loop, and controller-runtime's
# builder, manager and webhooks, in Rust (the kcr-* crates; imported as manager, builder, ...).
kcr-manager = {{dep_manager}}
kcr-builder = {{dep_builder}}
kcr-controller = {{dep_controller}}
kcr-cache = {{dep_cache}}
kcr-record = {{dep_record}}
kcr-webhook = {{dep_webhook}}
kcr-metrics = {{dep_metrics}}
kube = { version = "5.0.0", default-features = false, features = ["client", "derive", "rustls-tls", "ring"] }
k8s-openapi = { version = "0.29.0", default-features = false, features = ["std", "v1_37"] }
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
# The fake API server for unit tests, and a real control plane for the e2e tests
# (etcd, kube-apiserver, kube-controller-manager; `kcr envtest` builds and caches it).
kcr-controller = {{dep_controller_testing}}
kcr-testenv = {{dep_testenv}}
