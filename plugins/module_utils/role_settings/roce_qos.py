# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The roce_qos role's input rules: what reaches its udev rule and its systemd units as it is.

The interfaces are joined into one udev match (``KERNEL=="a|b"``) whose rule starts ``hpcfabric-roce-qos@<name>``;
the interpreter, the script directory and the configuration file are the words of the units' ``ExecStart=``. The
policy itself (``roce_qos_policy``) is checked where nodes and switches are compared (``qos_plan``) and by the role's
``roce_qos_policy`` filter.
"""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.input_syntax import ifname_problem, path_settings_problems

# the file settings: (variable, the role owns it as a directory)
PATHS = (('roce_qos_script_dir', True), ('roce_qos_config_path', False), ('roce_qos_python', False))


def _interface_problems(interfaces):
    if not isinstance(interfaces, list):
        yield 'roce_qos_interfaces', 'must be a list of interface names, got %s' % type(interfaces).__name__
        return
    for index, name in enumerate(interfaces):
        problem = ifname_problem(name)
        if problem:
            yield 'roce_qos_interfaces[%d]' % index, problem


def problems(settings):
    """See ``role_settings``. ``roce_qos_interfaces``: each an interface name (no quote, line break, blank, glob or
    ``|``, which would end or widen the udev match); ``roce_qos_python`` an absolute path (systemd runs
    it as the first word of ``ExecStart=``: no blank, quote or ``%``), ``roce_qos_script_dir`` a directory of the
    role's own (not a system directory), ``roce_qos_config_path`` an absolute path."""
    found = []
    if settings.get('roce_qos_interfaces') is not None:
        found.extend(_interface_problems(settings['roce_qos_interfaces']))
    return found + path_settings_problems(settings, PATHS)
