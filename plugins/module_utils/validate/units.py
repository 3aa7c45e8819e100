# SPDX-License-Identifier: GPL-3.0-or-later
# Copyright (c) hpcfabric maintainers
"""The validation's units: message sizes and bandwidths as the report and the messages print them, and the numbers of
its settings as Ansible hands them over (``-e`` on the command line gives strings).

Bad input raises :class:`ValueError` naming the setting.
"""

from __future__ import annotations

_SIZE_UNITS = ('B', 'KiB', 'MiB', 'GiB', 'TiB')


def human_size(size_bytes):
    """``33554432`` -> ``32 MiB``; ``1536`` -> ``1.5 KiB``."""
    value = float(size_bytes)
    unit = 0
    while value >= 1024 and unit < len(_SIZE_UNITS) - 1:
        value /= 1024
        unit += 1
    if unit == 0:
        return '%d B' % size_bytes
    return '%s %s' % (('%.2f' % value).rstrip('0').rstrip('.'), _SIZE_UNITS[unit])


def format_gbs(value):
    """Three significant digits, without an exponent: ``0.01``, ``1.5``, ``12.3``, ``175``, ``1234``."""
    if value is None:
        return '-'
    return '%.0f' % value if abs(value) >= 1000 else '%.3g' % value


def number(value, what):
    """``value`` as a number (an int or float as given, a float from a string); ValueError naming ``what``."""
    # values templated by Ansible may arrive as strings
    if isinstance(value, bool):
        raise ValueError('%s must be a number, got %r' % (what, value))
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise ValueError('%s must be a number, got %r' % (what, value))


def whole(value, what):
    """``value`` as an int; ValueError naming ``what`` for a fraction or anything that is not a number."""
    found = number(value, what)
    if isinstance(found, float):
        if not found.is_integer():
            raise ValueError('%s must be a whole number, got %r' % (what, value))
        found = int(found)
    return found


def fraction(value, what):
    """``value`` as a float in (0, 1]; ValueError naming ``what`` when it is missing or outside."""
    if value is None:
        raise ValueError('%s is required' % what)
    found = float(number(value, what))
    if not 0 < found <= 1:
        raise ValueError('%s must be in (0, 1], got %r' % (what, value))
    return found
