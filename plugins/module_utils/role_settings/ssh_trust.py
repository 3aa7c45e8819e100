# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The ssh_trust role's input rules: the MPI account, the controller's key directory, the key's sources."""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.input_syntax import named_problems, path_problem


def problems(settings):
    """See ``role_settings``."""
    found = named_problems({'ssh_trust_user': settings.get('ssh_trust_user')}, 'account',
                           allow_root=settings.get('ssh_trust_allow_root') or False, allow_variable='ssh_trust_allow_root')
    key_dir = settings.get('ssh_trust_key_dir')
    if key_dir is not None:
        found += [('ssh_trust_key_dir', problem) for problem in [path_problem(key_dir, owned=True, private=True)] if problem]
    found += named_problems({'ssh_trust_authorized_from': settings.get('ssh_trust_authorized_from')}, 'from_pattern')
    return found
