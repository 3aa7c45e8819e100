# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Stand-in for ansible-test's get-pip download: ensurepip, then pip from the configured index."""
from __future__ import annotations
import subprocess
import sys

subprocess.check_call([sys.executable, '-m', 'ensurepip', '--default-pip'], stdout=subprocess.DEVNULL)
args = [a for a in sys.argv[1:] if a not in ('--no-setuptools', '--no-wheel')]
sys.exit(subprocess.call([sys.executable, '-m', 'pip', 'install', '-q', '--upgrade'] + args))
