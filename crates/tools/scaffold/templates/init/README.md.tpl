# {{project_name}}

A Kubernetes operator for the `{{domain}}` API groups, scaffolded by `kcr` on the
kube-controllers-rs runtime: client-go's informers, work queue and sync loop and
controller-runtime's builder, manager and webhooks, in Rust.

## The two commands

| what | command |
|------|---------|
| **Run it** against the cluster your kubeconfig points at (installs the CRDs first) | `make run` |
| **Test it** (fmt, clippy, manifests up to date, unit tests, e2e tests on a local control plane that `kcr envtest` builds, Sieve's perturbations: `kcr sieve`) | `make test` (`bash hack/test.sh`) |

The Makefile has kubebuilder's lifecycle (`make help`), each target a line or two of
cargo and kubectl you can read and run by hand:

| target | what |
|--------|------|
| `make manifests` | `deploy/crd/*.yaml` and `deploy/rbac/role.yaml` from the code |
| `make install` / `make uninstall` | the CRDs into the cluster / out of it |
| `make run` | the manager on this machine (no webhooks) |
| `make run-webhooks` | the manager on this machine serving its webhooks (below) |
| `make docker-build IMG=...` | the image, from the release binary (the Dockerfile says why) |
| `make deploy IMG=...` / `make undeploy` | everything in `deploy/` into the cluster, the manager running `IMG` / all of it removed |

## Deploy it

```sh
make docker-build IMG={{repo}}:dev   # push it, or load it into the nodes (kind load ...)
make deploy IMG={{repo}}:dev         # namespace {{project_name}}-system
kubectl -n {{project_name}}-system wait --for=condition=Available \
  deployment/{{project_name}}-controller-manager --timeout=3m
kubectl apply -k deploy/samples/     # one object of each kind
```

With webhooks, deploy/ expects cert-manager (https://cert-manager.io) to issue the
serving certificate and inject its CA (deploy/certmanager/): install it first. Until the
manager is Available and the CA is injected, the API server refuses writes of the kinds
with webhooks (`failurePolicy: Fail`), so wait as above before applying the samples.

## Run the webhooks locally

`cargo run` serves no webhooks: the webhook server needs a certificate the API server
trusts, and deploy/'s webhook configurations send the API server to the in-cluster
Service, with the CA cert-manager injects. `make run-webhooks` (after `kcr create
webhook`) does it all for a cluster whose API server can reach this machine at
127.0.0.1 (a local control plane such as `kcr envtest`'s; for kind, `ADDRESS=` this
machine's address on kind's network): a serving certificate of its own in
`target/webhook-certs`, the webhook configurations applied with `url` and `caBundle`
instead of the Service and cert-manager's annotation, the manager serving them on port
9443, and those configurations deleted again when you stop it (with `failurePolicy:
Fail`, the API server would refuse every write of the kinds while no manager answers).
`hack/run-webhooks.sh` is the script; its header lists the variables.

## Test it like the runtime's own controllers: `kcr sieve`

`hack/test.sh` ends with a short pass of `kcr sieve`: the manager built, a control plane
of its own, and for each sample in `deploy/samples` a workload derived from its CRD's
schema (the sample created, a spec field changed to another valid value, deleted,
created again). The workload runs once as it is (the reference), then once per point
where a controller's view of the cluster can go wrong (Sieve, OSDI'22): the manager
killed right after each write it made, each watch event withheld until the object's next
one. Each run's end state must equal the reference; no object may be created twice or for
a deleted owner. Then a fresh object at the final spec must reach the same state as the
sequence of changes (Acto's differential oracle, SOSP'23). And since every spec it sends
is one the schema accepts, a Warning Event or `Ready=False` from your controller about one
is reported too: refuse that spec in the schema (a bound, an enum) or honour it.

```sh
kcr sieve                                  # the pass; the report: target/sieve/report.md
kcr sieve --full                           # every valid value of every spec field, all perturbations
kcr sieve --replay <plan> --workload <file>   # one plan again (the report prints the line)
```

Your own workloads go in `hack/sieve/*.yaml` (the format: `target/sieve/workloads/`),
paths the comparison should ignore (a value your controller generates per run) in
`hack/sieve/ignore`, one a line: `.status.lastSyncTime`, `Deployment:.spec.template.metadata.annotations`.

## Dependency versions

`kcr init --runtime-path` copies the runtime checkout's Cargo.lock: the project builds
with the versions the runtime's own CI tested (cargo drops the entries the project does
not use on its first build). `cargo update` moves to newer ones; run `bash hack/test.sh`
after it.

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
