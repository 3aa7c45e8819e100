# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""validate.units: sizes and bandwidths as the report prints them, and the numbers of the settings."""

from __future__ import annotations

import pytest

from ansible_collections.hpcfabric.cluster.plugins.module_utils.validate.units import (
    format_gbs, fraction, human_size, number, whole,
)

MIB = 1024 * 1024


@pytest.mark.parametrize('size, text', [(8, '8 B'), (1536, '1.5 KiB'), (32 * MIB, '32 MiB'), (1 << 30, '1 GiB'),
                                        (3 << 40, '3 TiB')])
def test_human_size(size, text):
    assert human_size(size) == text


@pytest.mark.parametrize('value, text', [(0.0, '0'), (0.01, '0.01'), (1.5, '1.5'), (12.34, '12.3'), (175.0, '175'),
                                         (1234.5, '1234'), (None, '-')])
def test_format_gbs(value, text):
    assert format_gbs(value) == text


def test_numbers_of_the_settings_may_be_strings():
    assert (number('2.5', 'x'), number(3, 'x'), whole('4096', 'x'), whole(8.0, 'x'), fraction('1', 'x')) == (
        2.5, 3, 4096, 8, 1.0)


@pytest.mark.parametrize('call, message', [
    (lambda: number(True, 'validate_iters'), '^validate_iters must be a number, got True$'),
    (lambda: number('fast', 'validate_iters'), "^validate_iters must be a number, got 'fast'$"),
    (lambda: whole('1.5', 'validate_iters'), "^validate_iters must be a whole number, got '1.5'$"),
    (lambda: fraction(None, 'validate_derived_fraction'), '^validate_derived_fraction is required$'),
    (lambda: fraction(0, 'validate_derived_fraction'), r'^validate_derived_fraction must be in \(0, 1\], got 0$'),
])
def test_numbers_of_the_settings_reject(call, message):
    with pytest.raises(ValueError, match=message):
        call()
