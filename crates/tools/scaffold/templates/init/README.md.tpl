# {{project_name}}

A Kubernetes operator for the `{{domain}}` API groups, scaffolded by `kcr` on the
kube-controllers-rs runtime: client-go's informers, work queue and sync loop and
controller-runtime's builder, manager and webhooks, in Rust.

## The two commands

| what | command |
|------|---------|
| **Run it** against the cluster your kubeconfig points at (installs the CRDs first) | `cargo run --bin manifests && kubectl apply -k deploy/crd && cargo run -- --kubeconfig ~/.kube/config` |
| **Test it** (fmt, clippy, manifests up to date, unit tests, e2e tests on a local control plane that `kcr envtest` builds) | `bash hack/test.sh` |

## Deploy it

```sh
cargo build --release --bin {{project_name}}
docker build -t {{repo}}:dev .                   # the image deploy/ names; push it, or load
                                                 # it into the cluster's nodes (kind load ...)
cargo run --bin manifests                        # CRDs and RBAC from the code
kubectl apply -k deploy/                         # namespace {{project_name}}-system
kubectl -n {{project_name}}-system wait --for=condition=Available \
  deployment/{{project_name}}-controller-manager --timeout=3m
kubectl apply -k deploy/samples/                 # one object of each kind
```

With webhooks, deploy/ expects cert-manager (https://cert-manager.io) to issue the
serving certificate and inject its CA (deploy/certmanager/): install it first. Until the
manager is Available and the CA is injected, the API server refuses writes of the kinds
with webhooks (`failurePolicy: Fail`), so wait as above before applying the samples.

## Layout

| path | what |
|------|------|
| `src/api/` | the API types, one file per kind and version; the CRDs are generated from them |
| `src/controller/` | one reconciler per kind, on the builder (`For`, `Owns`), with its RBAC rules |
| `src/webhook/` | defaulting and validating webhooks |
| `src/main.rs` | the binary: flags, the manager, every controller and webhook registered |
| `src/bin/manifests.rs` | writes `deploy/crd/*.yaml` and `deploy/rbac/role.yaml` from the code; `--check` fails on drift |
| `tests/e2e/` | e2e tests on a real control plane (kcr-testenv) |
| `deploy/` | kustomize: namespace, RBAC, Deployment, metrics Service, webhooks, samples |
| `PROJECT` | what kcr scaffolded; read by later `kcr create` commands |

Add a kind: `kcr create api --group <group> --version <version> --kind <Kind>`; a webhook:
`kcr create webhook --group <group> --version <version> --kind <Kind> --defaulting
--programmatic-validation`. Then `cargo run --bin manifests`.
