//! End-to-end tests on a real control plane (etcd, kube-apiserver,
//! kube-controller-manager: kcr-testenv, controller-runtime's envtest). Each test runs
//! in a namespace of its own; `kcr envtest` builds and caches the binaries
//! (hack/test.sh runs it first).

// +kcr:scaffold:e2e
