# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Every conditional in the repository's YAML is a string, read as data.

A plain YAML scalar with ``: `` in it (``- x is search('a: b')``) is a mapping, not an expression; ansible-core 2.19+
stops the task with "Conditional expressions must be strings" only when it runs, which for a failure case of a lab
scenario is the end of a long run. Such an item needs quotes.
"""
from __future__ import annotations

import yaml

from checkout import ROOT

CONDITIONAL_KEYS = ('that', 'when', 'failed_when', 'changed_when', 'until')
SCANNED = ('roles', 'playbooks', 'molecule', 'tests')


def yaml_files():
    files = [ROOT / 'site.yml']
    for top in SCANNED:
        files += [f for f in sorted((ROOT / top).rglob('*.yml')) if 'fixtures' not in f.parts]
    return files


def not_strings(node, path):
    """(path, item) for each conditional item under node that is neither a string nor a boolean."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in CONDITIONAL_KEYS:
                items = value if isinstance(value, list) else [value]
                found += [(path + [key], item) for item in items if not isinstance(item, (str, bool))]
            found += not_strings(value, path + [str(key)])
    elif isinstance(node, list):
        for index, item in enumerate(node):
            found += not_strings(item, path + [str(index)])
    return found


def test_the_scan_finds_an_unquoted_colon():
    tasks = yaml.safe_load("- ansible.builtin.assert:\n    that:\n      - x is search('a: b')\n      - \"x is search('a: b')\"\n")
    assert not_strings(tasks, []) == [(['0', 'ansible.builtin.assert', 'that'], {"x is search('a": "b')"})]


def test_every_conditional_is_a_string():
    files = yaml_files()
    assert len(files) > 100
    found = []
    for path in files:
        for document in yaml.safe_load_all(path.read_text()):
            found += ['%s %s: %r' % (path.relative_to(ROOT), '.'.join(where), item)
                      for where, item in not_strings(document, [])]
    assert found == []
