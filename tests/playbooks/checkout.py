# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Where the checkout and its ansible-playbook are, for the tests that run the collection's playbooks."""
from __future__ import annotations
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# the ansible-playbook of the Python running the tests (the checkout's .venv)
ANSIBLE_PLAYBOOK = str(Path(sys.executable).parent / 'ansible-playbook')
