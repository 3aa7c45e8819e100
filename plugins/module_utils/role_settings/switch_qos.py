# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The switch_qos role's input rules: what reaches a switch's configuration, the NVUE URL and the SONiC command line.

Port names become lines of the EOS configuration and words of ``nv set`` commands; the NVUE address is the host of
``https://<switch_qos_nvue_host>:<switch_qos_nvue_port>/nvue_v1`` (vars/main.yml); the SONiC patch path is a word of
``config apply-patch``. The policy (``switch_qos_policy``) is checked where nodes and switches are compared
(``qos_plan``) and by the ``roce_switch_config`` filter; the platform and the EOS queue keyword by their choices.
"""
from __future__ import annotations

from ansible_collections.hpcfabric.cluster.plugins.module_utils.input_syntax import path_settings_problems, url_host_problem
from ansible_collections.hpcfabric.cluster.plugins.module_utils.roce_policy import PolicyError
from ansible_collections.hpcfabric.cluster.plugins.module_utils.switch_qos_render import check_ports

# the file settings: (variable, the role owns it as a directory)
PATHS = (('switch_qos_render_dir', True), ('switch_qos_sonic_patch_path', False))


def _port_problems(ports):
    """The port list as the renderers take it (check_ports: names that cannot end a configuration line, once each)."""
    try:
        check_ports(ports)
    except PolicyError as error:
        # each error reads "switch_qos_ports: <what is wrong>"
        return [tuple(message.split(': ', 1)) for message in error.errors]
    return []


def _nvue_problems(settings):
    found = []
    host = settings.get('switch_qos_nvue_host')
    if host is not None and url_host_problem(host):
        found.append(('switch_qos_nvue_host', url_host_problem(host)))
    port = settings.get('switch_qos_nvue_port')
    if port is not None and (not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536):
        found.append(('switch_qos_nvue_port', '%r is not a TCP port (1-65535)' % (port,)))
    user = settings.get('switch_qos_nvue_user')
    # basic authentication sends user:password: a : in the user would move the rest into the password
    if user is not None and (not isinstance(user, str) or not user or ':' in user or not user.isprintable()):
        found.append(('switch_qos_nvue_user', '%r is not a user name (non-empty, printable, without :)' % (user,)))
    return found


def problems(settings):
    """See ``role_settings``. ``switch_qos_ports``: a non-empty list of port names (a letter, then letters, digits and
    ``/._:-``: no blank or line break, trailing ones included), each once; ``switch_qos_nvue_host``: a host name, IPv4
    address or bracketed IPv6 address, nothing that changes the URL; ``switch_qos_nvue_port`` 1-65535;
    ``switch_qos_nvue_user`` without ``:``; ``switch_qos_render_dir`` a directory of the role's own and
    ``switch_qos_sonic_patch_path`` an absolute path, neither with a blank, quote or shell character."""
    found = []
    if settings.get('switch_qos_ports') is not None:
        found.extend(_port_problems(settings['switch_qos_ports']))
    found.extend(_nvue_problems(settings))
    return found + path_settings_problems(settings, PATHS)
