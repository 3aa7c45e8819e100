# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""allreduce_busbw filter: nccl-tests' busbw = algbw * 2 * (n - 1) / n."""

from __future__ import annotations

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.hpcfabric.cluster.plugins.filter.allreduce_busbw import FilterModule

allreduce_busbw = FilterModule().filters()['allreduce_busbw']


def test_filter_is_registered_under_its_file_name():
    assert list(FilterModule().filters()) == ['allreduce_busbw']


@pytest.mark.parametrize('algbw, ranks, busbw', [
    (100, 8, 175.0),
    (100, 2, 100.0),
    (100, 1, 0.0),
    (180.71, 16, 338.83125),
    (26.18, 16, 49.0875),
    ('100', '8', 175.0),
    (100, 8.0, 175.0),
])
def test_values(algbw, ranks, busbw):
    assert allreduce_busbw(algbw, ranks) == pytest.approx(busbw)


@pytest.mark.parametrize('algbw, ranks, message', [
    (100, 0, 'ranks must be at least 1'),
    (100, -8, 'ranks must be at least 1'),
    (-5, 8, 'algbw must not be negative'),
    ('fast', 8, 'algbw must be a number'),
    (None, 8, 'algbw must be a number'),
    (100, 2.5, 'ranks must be a whole number'),
    (100, 'eight', 'ranks must be a whole number'),
    (100, True, 'ranks must be a whole number'),
])
def test_bad_input_raises_filter_error(algbw, ranks, message):
    with pytest.raises(AnsibleFilterError) as err:
        allreduce_busbw(algbw, ranks)
    assert message in str(err.value)
