# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Shared helpers for the unit tests: recorded command outputs and running a module's main()."""
from __future__ import annotations
import json
from pathlib import Path

import pytest
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

FIXTURES = Path(__file__).parent / 'fixtures'


@pytest.fixture
def fixture_text():
    """Return the text of tests/unit/fixtures/<command>/<name>."""
    def read(command, name):
        return (FIXTURES / command / name).read_text(encoding='utf-8')
    return read


@pytest.fixture
def fixture_path():
    """Return the path of tests/unit/fixtures/<command>/<name> (for sysfs trees and the like)."""
    def path(command, name=''):
        return FIXTURES / command / name
    return path


@pytest.fixture
def run_module(capsys, monkeypatch):
    """Run an Ansible module's main() with the given arguments; return its JSON result.

    The result carries ``failed: True`` when the module called fail_json, and ``warnings`` as the plain texts the
    module passed to warn(): ansible-core keeps warnings in a process-wide registry and, once controller code is
    imported in the same process, sends them to the display instead of the result, so the JSON's own list is not
    reliable in a test run.
    """
    def run(module, args, check_mode=False):
        args = dict(args)
        if check_mode:
            args['_ansible_check_mode'] = True
        warned = []
        original = AnsibleModule.warn

        def warn(self, warning):
            warned.append(warning)
            return original(self, warning)

        monkeypatch.setattr(AnsibleModule, 'warn', warn)
        with patch_module_args(args):
            with pytest.raises(SystemExit):
                module.main()
        result = json.loads(capsys.readouterr().out)
        result['warnings'] = warned
        return result
    return run


@pytest.fixture
def tools_only(tmp_path, monkeypatch):
    """Make ``tools`` ({name: shell body}) the only commands a module's get_bin_path finds (not the machine's own)."""
    def make(tools):
        bindir = tmp_path / 'bin'
        bindir.mkdir(exist_ok=True)
        for name, body in tools.items():
            script = bindir / name
            script.write_text('#!/bin/sh\n%s\n' % body)
            script.chmod(0o755)
        # get_bin_path also looks in PATH and the sbin directories: it finds the fakes only
        monkeypatch.setattr(AnsibleModule, 'get_bin_path',
                            lambda self, name, *args, **kwargs: str(bindir / name) if (bindir / name).exists() else None)
    return make
