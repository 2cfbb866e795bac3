# modelplane.serving: developer entry points. Every target bootstraps .venv itself.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
COLLECTIONS := .collections
SPEC ?= examples/servingstack.yaml
STAMP := $(VENV)/.installed
# Where the benchmarks are.
BENCHES := tests/bench
EE_CONTEXT ?= build/ee/context
EE_TAG ?= modelplane-serving-ee:latest
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/$(COLLECTIONS)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PATH := $(CURDIR)/$(BIN):$(PATH)

CONTROL_PLANE := testing/cluster/build

.PHONY: help venv control-plane plan test test-helm unit lint sanity bench demo deploy clean test-charts ee-context ee bench-fleet

help: ## List the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

$(STAMP): requirements.txt tests/requirements.txt tools/install_collections.py tools/install_kube_binaries.py
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "Python >= 3.11 is required")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r tests/requirements.txt
	$(BIN)/python tools/install_collections.py $(COLLECTIONS)
	$(BIN)/python tools/install_kube_binaries.py $(VENV)
	touch $@

venv: $(STAMP) ## Create .venv with every dependency, the collections, and real helm 3 + 4 and kubectl.

# Built once per machine and set of pins into cache folders outside the repository (testing/cluster/README.md):
# the control plane, and the operators the test cluster runs (their own folder and key); a warm cache makes this a
# check of under a second.
control-plane: ## Build the test control plane (kube-apiserver, etcd, kwok...) and the operators from Go modules, once per machine.
	@$(CONTROL_PLANE)

plan: $(STAMP) ## Validate SPEC (default examples/servingstack.yaml) and print its install plan.
	$(BIN)/ansible-playbook playbooks/plan.yml -e servingstack_src=$(abspath $(SPEC))

# Two workers (this project's CI has 2 cores; three measured no faster: the suite is CPU-bound); --dist loadfile keeps
# each test module's ordered, shared-cluster tests on one worker, and --no-loadscope-reorder hands the files out in
# collection order (tests/conftest.py puts the longest first) instead of xdist's, files with the most tests first,
# which left the longest single-test files for the end with one worker idle. pyproject.toml's testpaths cover tests/
# (the collection's tests) and testing/ (the self-tests of the test charts, the test control plane and its operators).
# The benchmarks are not tests of behaviour: they time the collection against baselines on an otherwise idle machine,
# so they run apart (make bench, by hand: see .ci/run).
test: $(STAMP) control-plane ## Run every test: lint, sanity, unit, control plane, playbooks, molecule default (not the benchmarks).
	$(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder -m "not bench" --durations=20

# The tests that drive a real helm binary; HELM_MAJOR=3 or 4 picks one (both when unset, as in `make test`).
test-helm: $(STAMP) control-plane ## Run the real-helm tests (HELM_MAJOR=4 for helm 4 only).
	$(BIN)/python -m pytest -n 2 --dist loadfile -m realhelm

unit: $(STAMP) ## Run the fast unit tests only.
	$(BIN)/python -m pytest tests/unit

lint: $(STAMP) ## ruff, yamllint and ansible-lint.
	$(BIN)/python -m pytest tests/lint

# One after the other, alone, so that no other work skews their ratios (about 10 minutes on 2 cores).
bench: $(STAMP) control-plane ## Run the benchmarks (tests/bench): their ratios, each speed target met or not; what a run must do is asserted.
	$(BIN)/python -m pytest -p no:xdist -m "bench and not fleet" -s $(BENCHES)

# FLEET_SIZE=N for another fleet size (issue 12's targets are for 20).
bench-fleet: $(STAMP) control-plane ## Run the fleet benchmark: a fleet of test clusters vs one, fresh and no-op.
	$(BIN)/python -m pytest -p no:xdist -m fleet -s tests/bench/test_bench_fleet.py

demo: $(STAMP) control-plane ## Converge examples/servingstack.yaml twice on a local control plane with SIMULATED nodes.
	SPEC=$(SPEC) tests/demo/run

deploy: $(STAMP) ## Converge the real cluster SPEC's secrets name (TARGET_KUBECONFIG=path targets a cluster directly).
	$(BIN)/ansible-playbook playbooks/site.yml -e servingstack_src=$(abspath $(SPEC)) \
	  $(if $(TARGET_KUBECONFIG),-e servingstack_kubeconfig=$(abspath $(TARGET_KUBECONFIG)))

clean: ## Remove the virtualenv, collections and caches.
	rm -rf $(VENV) $(COLLECTIONS) .pytest_cache .ruff_cache .hypothesis build

# The execution environment for AWX / Automation Controller (execution-environment.yml) installs this
# collection from the tarball built here into build/ee, where the definition looks for it.
ee-context: $(STAMP) ## Build the collection tarball and the EE's build context (EE_CONTEXT, default build/ee/context).
	rm -f build/ee/modelplane-serving-*.tar.gz
	$(BIN)/ansible-galaxy collection build --force --output-path build/ee
	$(BIN)/ansible-builder create -f execution-environment.yml --context $(EE_CONTEXT) --output-filename Containerfile

ee: ee-context ## Build the EE image with podman or docker: make ee EE_TAG=registry.example.com/modelplane/serving-ee:0.1.0
	$(BIN)/ansible-builder build -f execution-environment.yml --context $(EE_CONTEXT) --output-filename Containerfile \
	  --tag $(EE_TAG) $(if $(EE_RUNTIME),--container-runtime $(EE_RUNTIME))

# Test charts (testing/charts): built from our templates plus ../shared/upstream data, packaged by the venv's helm.
test-charts: $(STAMP) ## Build the test charts into a chart repository: make test-charts DIR=path.
	@test -n "$(DIR)" || { echo "usage: make test-charts DIR=path" >&2; exit 2; }
	$(BIN)/python testing/charts/build.py --helm $(BIN)/helm $(abspath $(DIR))
