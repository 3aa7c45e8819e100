# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The nvidia_driver role's input rules: a driver branch and a version of it, open modules that exist for it, the
CUDA toolkits it runs, extra packages of the branch, the repository's URLs.

What depends on the host (the OS's CUDA repository and driver sources, its GPUs and NVSwitches, the kernel and OFED
for GPUDirect) stays in the role's assert.yml, marked as host state.
"""
from __future__ import annotations

import re

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.hpcfabric.cluster.plugins.module_utils.input_syntax import url_problem
from ansible_collections.hpcfabric.cluster.plugins.module_utils.nvidia_driver import cuda_branch_problems, split_extra

_BRANCH_RE = re.compile(r'^[0-9]{3}$')
# the first branch with open kernel modules
OPEN_MODULES_FIRST_BRANCH = 515


def _branch_problems(settings):
    branch = settings.get('nvidia_driver_branch')
    if not isinstance(branch, str) or not _BRANCH_RE.fullmatch(branch):
        yield 'nvidia_driver_branch', ("%r is not a driver branch (three digits, e.g. '580'; a full version such as "
                                       "580.95.05 goes in nvidia_driver_version)" % (branch,))
        return
    version = settings.get('nvidia_driver_version')
    if version and not re.fullmatch(r'%s[.][0-9]+([.][0-9]+)?' % branch, str(version)):
        yield 'nvidia_driver_version', '%r is not a version of branch %s (e.g. %s.95.05)' % (version, branch, branch)
    if boolean(settings.get('nvidia_driver_open', True), strict=False) and int(branch) < OPEN_MODULES_FIRST_BRANCH:
        yield 'nvidia_driver_open', ('open kernel modules exist from R%d on; branch %s has only the proprietary ones '
                                     '(nvidia_driver_open: false)' % (OPEN_MODULES_FIRST_BRANCH, branch))
    cuda = [str(v) for v in settings.get('nvidia_driver_cuda_versions') or []]
    for problem in cuda_branch_problems(cuda, branch):
        yield 'nvidia_driver_cuda_versions', '%s, and nvidia_driver_branch is %s' % (problem, branch)
    for problem in split_extra(settings.get('nvidia_driver_packages_extra') or [], branch)[2]:
        yield 'nvidia_driver_packages_extra', (
            '%s, and nvidia_driver_branch is %s (the role installs such packages at the driver\'s exact version: name '
            'them for branch %s, or without the branch from R580)' % (problem, branch, branch))


def problems(settings):
    """See ``role_settings``."""
    found = list(_branch_problems(settings))
    allow_http = boolean(settings.get('nvidia_driver_allow_http') or False, strict=False)
    for name in ('nvidia_driver_repo_url', 'nvidia_driver_keyring_url'):
        problem = settings.get(name) and url_problem(settings[name], allow_http, 'nvidia_driver_allow_http')
        if problem:
            found.append((name, problem))
    return found
