# -*- coding: utf-8 -*-
# Copyright (c) hpcfabric maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the validate role: ring_rounds, allreduce_threshold, allreduce_verdict, isolation_verdict,
preflight_problems.

Each filter is documented in its own file beside this one (ring_rounds.yml, ...), as ansible-doc looks
documentation up by filter name. The logic is in module_utils/validate_checks.py.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.hpcfabric.cluster.plugins.module_utils import validate_checks


def _filter(name, function):
    def run(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except ValueError as exc:
            raise AnsibleFilterError('%s: %s' % (name, exc))
    run.__name__ = name
    run.__doc__ = function.__doc__
    return run


ring_rounds = _filter('ring_rounds', validate_checks.ring_rounds)
allreduce_threshold = _filter('allreduce_threshold', validate_checks.allreduce_threshold)
allreduce_verdict = _filter('allreduce_verdict', validate_checks.allreduce_verdict)
isolation_verdict = _filter('isolation_verdict', validate_checks.isolation_verdict)
preflight_problems = _filter('preflight_problems', validate_checks.preflight_problems)


class FilterModule(object):
    """The validate role's filters."""

    def filters(self):
        return {
            'ring_rounds': ring_rounds,
            'allreduce_threshold': allreduce_threshold,
            'allreduce_verdict': allreduce_verdict,
            'isolation_verdict': isolation_verdict,
            'preflight_problems': preflight_problems,
        }
