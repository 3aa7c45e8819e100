# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The pip_environment filter: where pip takes packages from, as a task's environment."""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.pip_env import pip_environment
from ansible_collections.hpcfabric.cluster.plugins.plugin_utils.filters import as_filter

DOCUMENTATION = r'''
name: pip_environment
short_description: The environment of a pip task - PyPI, a mirror or an offline wheelhouse
version_added: 0.2.0
author: hpcfabric maintainers (@hpcfabric)
description:
  - The one rule by which the roles of this collection tell pip where packages come from. The choice is made with
    C(PIP_*) variables rather than pip options, because with C(extra_args) the pip module's check mode always
    reports a change.
  - With O(wheelhouse) pip reads that directory only (C(PIP_NO_INDEX), C(PIP_FIND_LINKS)) and never reaches an
    index, as an air-gapped node needs; otherwise O(index_url) names a mirror (C(PIP_INDEX_URL)); otherwise pip uses
    PyPI or what the node's pip.conf says. C(PIP_DISABLE_PIP_VERSION_CHECK) is always set, so that pip does not ask
    PyPI whether it is the newest pip.
  - The input may hold a proxy's password; the task that uses the result should be C(no_log).
positional: _input
options:
  _input:
    description: The base environment (a proxy, C(PIP_CERT)), names to strings.
    type: dict
    required: true
  wheelhouse:
    description: A directory of wheels (and sdists) on the node, absolute.
    type: path
  index_url:
    description: A PyPI mirror's simple index URL; ignored with O(wheelhouse).
    type: str
  no_binary:
    description: Projects pip must build from source (C(PIP_NO_BINARY)).
    type: list
    elements: str
  only_binary:
    description: Projects pip must take as a wheel, never building them (C(PIP_ONLY_BINARY)).
    type: list
    elements: str
'''

EXAMPLES = r'''
- name: Install CuPy from the wheelhouse the controller copied
  ansible.builtin.pip:
    name: cupy-cuda12x
    virtualenv: /opt/hpcfabric/bench/venv
  environment: "{{ {'https_proxy': proxy} | hpcfabric.cluster.pip_environment(wheelhouse='/opt/hpcfabric/bench/wheelhouse') }}"
  no_log: true
'''

RETURN = r'''
_value:
  description: The input with the C(PIP_*) variables added.
  type: dict
'''


class FilterModule:
    """hpcfabric.cluster pip_environment filter."""

    def filters(self):
        return {'pip_environment': as_filter('pip_environment', pip_environment)}
