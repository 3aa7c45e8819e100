# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Hash the files that can change a molecule scenario's result.

Reads NUL-separated paths (git ls-files -z) on stdin; argv[1] is the scenario's directory. Left out: docs and
changelogs, the other scenarios, and the tests that run without the lab. Kept: what every scenario shares
(molecule/shared/) and the recorded outputs the stand-ins print (tests/unit/fixtures/). Prints one sha256 over paths
and contents.
"""
from __future__ import annotations
import hashlib
import os
import sys

LAB_FREE = ('docs/', 'changelogs/', 'tests/unit/', 'tests/playbooks/', 'tests/bench/', 'tests/perf/')
# under LAB_FREE or molecule/, yet read by the scenarios
SHARED = ('molecule/shared/', 'tests/unit/fixtures/')


def relevant(path, scenario):
    if path.startswith(SHARED):
        return True
    if path.endswith('.md') or path.startswith(LAB_FREE):
        return False
    return not path.startswith('molecule/') or path.startswith(scenario.rstrip('/') + '/')


def main():
    scenario = sys.argv[1]
    digest = hashlib.sha256()
    for path in sorted(p for p in sys.stdin.read().split('\0') if p):
        if relevant(path, scenario) and os.path.isfile(path):
            digest.update(path.encode() + b'\0')
            with open(path, 'rb') as f:
                digest.update(f.read())
            digest.update(b'\0')
    print(digest.hexdigest())


if __name__ == '__main__':
    main()
