"""Hypothesis: every declared RFC 9420 structure survives encode then decode unchanged."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocols.libraries.mls import messages
from protocols.libraries.mls.codec import codec_of, decode, encode

from .strategies import values_of

#: Structures that select on something outside their own bytes, and what they are decoded with.
PARAMETERS = {
    messages.FramedContentAuthData: {"content_type": st.sampled_from(messages.ContentType)},
    messages.PrivateMessageContent: {"content_type": st.sampled_from(messages.ContentType)},
}


def declared_structures() -> list[type]:
    """Every class the messages package exports that has a wire codec (structs and variants)."""
    found = []
    for name in messages.__all__:
        value = getattr(messages, name)
        if isinstance(value, type) and not issubclass(value, int):
            codec_of(value)
            found.append(value)
    return found


STRUCTURES = declared_structures()


def test_every_structure_cites_its_rfc_section():
    for cls in STRUCTURES:
        assert "RFC 9420 §" in (cls.__doc__ or ""), cls.__name__


@pytest.mark.parametrize("cls", STRUCTURES, ids=lambda cls: cls.__name__)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_encode_then_decode_gives_the_same_value(cls, data):
    params = {name: data.draw(strategy, label=name) for name, strategy in PARAMETERS.get(cls, {}).items()}
    value = data.draw(values_of(cls, params), label=cls.__name__)
    encoded = encode(value, cls, **params)
    assert decode(cls, encoded, **params) == value
    assert encode(decode(cls, encoded, **params), cls, **params) == encoded


def test_a_field_without_a_wire_type_is_a_declaration_error():
    @attrs.frozen
    class Undeclared:
        count: int

    with pytest.raises(TypeError, match=r"Undeclared.count: no wire codec for int: annotate the field"):
        encode(Undeclared(1))
