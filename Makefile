# Entry points for people and CI. Every target runs `setup` first, so each works on a fresh machine.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
LAB_NODES ?= 4
# the lab nodes' Debian: bookworm or trixie (tools/lab refuses anything else)
LAB_SUITE ?= bookworm
# fabric rails per node (tools/lab: 1 to 8, fab0, fab1, ...)
LAB_RAILS ?= 2
export LAB_NODES LAB_SUITE LAB_RAILS
# a SONiC stand-in switch (switch01, tests/standins/sonic.py) in the lab of `make lab` and `make demo`; not exported,
# so the molecule scenarios' labs (make test) have none unless a scenario asks for one
LAB_SWITCH ?= 1

.PHONY: help setup lint sanity ansible-lint unit pytest molecule build test demo lab lab-down clean gpu-proof gpu-proof-bundle perf

# gpu-proof runs on a GPU node without network, so it does not run setup. A machine that lacks what it needs stops
# here, before make runs anything: one line saying what is missing (tests/gpu/proof.sh --check).
ifneq ($(filter gpu-proof,$(MAKECMDGOALS)),)
GPU_PROOF_MISSING := $(shell tests/gpu/proof.sh --check)
ifneq ($(GPU_PROOF_MISSING),)
$(error $(GPU_PROOF_MISSING))
endif
endif

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-17s %s\n", $$1, $$2}'

setup: ## venv, dependency collections, Debian packages the tests need (idempotent)
	@tools/setup.sh

lint: ansible-lint sanity ## ansible-lint (production profile) and ansible-test sanity

ansible-lint: setup
	@tools/run.sh ansible-lint

sanity: setup
	@tools/run.sh sanity

unit: setup ## unit tests of modules, module_utils and filters (ansible-test units)
	@tools/run.sh units

pytest: setup ## tests that need no lab: inventory checks and per-OS variables through the real playbooks, the bench scripts
	@tools/run.sh pytest

molecule: setup ## every molecule scenario, on the lab
	@tools/run.sh molecule

build: setup ## build the collection tarball, install it offline, ansible-doc every plugin
	@tools/run.sh build

test: setup ## lint + unit + pytest + molecule (results kept per file hash) + build: what CI runs
	@tools/run.sh test

demo: setup ## bring the lab up (LAB_NODES, LAB_SUITE, LAB_RAILS, LAB_SWITCH), run site.yml and the validation on it
	@LAB_SWITCH=$(LAB_SWITCH) tools/demo.sh

lab: setup ## start a lab of LAB_NODES (default 4) Debian LAB_SUITE (bookworm, or trixie) nodes with LAB_RAILS (2) fabric rails and LAB_SWITCH (1) SONiC stand-in switch
	@LAB_SWITCH=$(LAB_SWITCH) tools/lab up $(LAB_NODES)

perf: setup ## on the lab of `make demo` (up, site.yml run; LAB_DIR): tests/perf/fabric_efficiency.sh, then check_inventory_time.sh; fails when no lab is up
	@status="$$(tools/lab status 2>&1)" || { echo "$$status" >&2; echo "make perf: no lab is up: 'make demo' starts one and runs site.yml on it" >&2; exit 1; }
	@tests/perf/fabric_efficiency.sh
	@tests/perf/check_inventory_time.sh

lab-down: ## remove the lab: containers, networks, firewall rules, proxy
	@tools/lab down

gpu-proof: ## on an NVIDIA node (no network, no compiler): the bundle's CUDA-aware MPI, facts, GPU allreduce engines against the GPU's limit, smoke training; outputs in GPU_PROOF_OUT
	@tests/gpu/proof.sh

gpu-proof-bundle: setup ## on a networked machine, after molecule mpi_cuda: its CUDA-aware MPI package and the wheels gpu-proof needs, in .cache/gpu-proof-bundle
	@.venv/bin/python tests/gpu/bundle.py

clean: lab-down ## remove the lab, the venv and every cache
	rm -rf .venv .cache tests/output
