# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""Every role's defaults pass its own argument spec, as ansible-core checks them when the role starts: a default
the spec refuses (a null against choices, say) stops every play that uses the role on its defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

ROOT = Path(__file__).resolve().parents[2]
ROLES = sorted(path.parent.parent.name for path in ROOT.glob('roles/*/meta/argument_specs.yml'))


def _spec(options):
    """The spec as ArgumentSpecValidator takes it: without the documentation keys, and without ``required``, which
    the inventory meets, not the defaults."""
    return dict((name, dict((key, _spec(value) if key == 'options' else value) for key, value in option.items()
                            if key not in ('description', 'version_added', 'required')))
                for name, option in options.items())


@pytest.mark.parametrize('role', ROLES)
def test_the_defaults_pass_the_argument_spec(role):
    options = yaml.safe_load((ROOT / 'roles' / role / 'meta' / 'argument_specs.yml').read_text())[
        'argument_specs']['main']['options']
    defaults = yaml.safe_load((ROOT / 'roles' / role / 'defaults' / 'main.yml').read_text()) or {}
    # ansible-core templates a default before it checks it: a templated one is checked where it is used
    values = dict((name, value) for name, value in defaults.items()
                  if name in options and not (isinstance(value, str) and '{{' in value))
    result = ArgumentSpecValidator(_spec(options)).validate(values)
    assert result.error_messages == []
