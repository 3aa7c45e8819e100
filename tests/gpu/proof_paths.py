# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Paths the GPU proof's tests share (a module of its own: every test folder here has a conftest)."""
from __future__ import annotations
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / 'tests' / 'gpu'
FIXTURES = HERE / 'fixtures'
# the outputs of real runs on GPU nodes
RUNS = ROOT / 'docs' / 'gpu_proof_runs'
