"""protocols.libraries.mls.values.replaced: a frozen value's copy with some fields changed, on the per-message path."""

from __future__ import annotations

import attrs
import pytest

from protocols.libraries.mls.values import replaced


@attrs.frozen
class Point:
    x: int
    y: int = attrs.field(converter=int)


def test_the_copy_has_the_changes_and_the_original_is_untouched() -> None:
    point = Point(1, 2)
    moved = replaced(point, y=5)
    assert (moved, point) == (Point(1, 5), Point(1, 2))
    assert type(moved) is Point and moved is not point


def test_an_unknown_field_is_refused() -> None:
    with pytest.raises(TypeError, match="no field 'z'"):
        replaced(Point(1, 2), z=3)
