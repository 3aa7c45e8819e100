# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The one rule by which every role layers its per-OS variable files (the os_vars_files filter's logic)."""
from __future__ import annotations

import os


def os_vars_files(role_path, facts):
    """The role's existing ``vars/`` files for the host's OS, least specific first: ``<os_family>``,
    ``<os_family>_<major>``, ``<distribution>``, ``<distribution>_<major>`` (a name twice counts once). ValueError
    when facts are missing or the role has no file for the OS (naming the OS and the files it has)."""
    missing = [k for k in ('os_family', 'distribution', 'distribution_major_version') if not facts.get(k)]
    if missing:
        raise ValueError('the facts lack %s (gather them with ansible.builtin.setup first)' % ', '.join(missing))
    family, name, major = facts['os_family'], facts['distribution'], facts['distribution_major_version']
    layers = []
    for stem in (family, '%s_%s' % (family, major), name, '%s_%s' % (name, major)):
        if stem not in layers:
            layers.append(stem)
    vars_dir = os.path.join(role_path, 'vars')
    found = [p for p in (os.path.join(vars_dir, stem + '.yml') for stem in layers) if os.path.isfile(p)]
    if not found:
        offered = sorted(f[:-4] for f in os.listdir(vars_dir) if f.endswith('.yml') and f != 'main.yml') \
            if os.path.isdir(vars_dir) else []
        raise ValueError('role %s does not support %s %s: it has variables for %s only'
                         % (os.path.basename(os.path.normpath(role_path)), name, major, ', '.join(offered) or 'no OS'))
    return found
