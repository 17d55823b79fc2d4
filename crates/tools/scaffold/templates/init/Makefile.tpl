# The lifecycle of kubebuilder's Makefile, on this project's tools: cargo, kubectl
# (kustomize is built in) and a container tool. `make help` lists the targets.
#
# Every target that talks to a cluster uses the one your kubeconfig points at
# (KUBECONFIG, or ~/.kube/config); KUBECTL="kubectl --context other" picks another.

# The image deploy/ runs (deploy/manager/kustomization.yaml names it; `make deploy` swaps
# in IMG without editing it).
IMG ?= {{repo}}:dev
KUBECTL ?= kubectl
CONTAINER_TOOL ?= docker

.DEFAULT_GOAL := help
.PHONY: help manifests build test install uninstall run run-webhooks docker-build deploy undeploy

help: ## These targets.
	@awk -F':.*## ' '/^[a-z-]+:.*## / { printf "  %-14s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

manifests: ## Write deploy/crd/*.yaml and deploy/rbac/role.yaml from the code.
	cargo run --quiet --bin manifests

build: manifests ## Build the manager (release).
	cargo build --release --bin {{project_name}}

test: ## fmt, clippy, manifests, unit and e2e tests on a local control plane, kcr sieve.
	bash hack/test.sh

install: manifests ## Install the CRDs into the cluster.
	@# A CRD applied a moment ago may have no conditions yet: kubectl wait fails at once then.
	@crds=$$($(KUBECTL) apply -k deploy/crd -o name) && echo "$$crds" && \
	for i in $$(seq 1 30); do \
	  $(KUBECTL) wait --for=condition=Established --timeout=60s $$crds >/dev/null 2>&1 && exit 0; \
	  sleep 1; \
	done; $(KUBECTL) wait --for=condition=Established --timeout=1s $$crds

uninstall: ## Remove the CRDs from the cluster (and every object of their kinds).
	$(KUBECTL) delete -k deploy/crd --ignore-not-found

run: install ## Run the manager on this machine against the cluster (no webhooks).
	cargo run --bin {{project_name}} --

run-webhooks: install ## Run the manager here serving its webhooks: hack/run-webhooks.sh.
	KUBECTL="$(KUBECTL)" bash hack/run-webhooks.sh

docker-build: build ## Build the image IMG from the release binary (see the Dockerfile).
	$(CONTAINER_TOOL) build -t $(IMG) .

deploy: manifests ## Deploy everything in deploy/ to the cluster, the manager running IMG.
	$(KUBECTL) kustomize deploy/ | sed 's|image: {{repo}}:dev$$|image: $(IMG)|' | $(KUBECTL) apply -f -

undeploy: ## Remove everything deploy/ made, the CRDs and their objects too.
	$(KUBECTL) delete -k deploy/ --ignore-not-found
