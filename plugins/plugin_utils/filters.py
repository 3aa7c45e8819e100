# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The one way this collection's filters report bad input.

The logic of every filter is a plain function in module_utils that raises ValueError (or TypeError) with a message
that names what is wrong; ``as_filter`` turns those into AnsibleFilterError prefixed with the filter's name, so a
playbook author sees ``<filter>: <what is wrong>`` and never a Python traceback.
"""
from __future__ import annotations

import functools

from ansible.errors import AnsibleFilterError


def as_filter(name, function):
    """Wrap ``function`` as the filter ``name``: ValueError and TypeError become AnsibleFilterError."""
    @functools.wraps(function)
    def run(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except (ValueError, TypeError) as exc:
            raise AnsibleFilterError('%s: %s' % (name, exc)) from exc
    run.__name__ = name
    return run
