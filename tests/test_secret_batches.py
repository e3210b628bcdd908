"""A call's strings searched at once: ``may_hold_secret`` joins them, and must never pass a value one of whose strings the scan flags."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from datasette_memory import InvalidInput, Memory, hookimpl
from datasette_memory.core import plugins
from datasette_memory.core.secrets import first_secret, may_hold_secret, secret_path, strings_in

from .test_secrets import FORMATS, FORMAT_IDS, ORDINARY, text_families

ENTITIES = [
    {"name": f"svc-{i:06d}", "entityType": "service", "observations": [f"svc-{i:06d} listens on port {10000 + i}", f"owned by team {i % 97}"]}
    for i in range(300)
]


def nested(strings, where):
    "``strings`` placed in a value the way a call nests them: list items, dict values or dict keys."
    if where == "items":
        return strings
    if where == "values":
        return [{"name": s, "entityType": "t", "observations": [s]} for s in strings]
    return [{s: "value"} for s in strings]


@pytest.mark.parametrize("where", ["items", "values", "keys"])
@pytest.mark.parametrize("variation,text,fragment,kind", FORMATS, ids=FORMAT_IDS)
def test_a_secret_among_ordinary_strings_is_found_where_it_is(variation, text, fragment, kind, where):
    value = [*ENTITIES[:150], nested([*ORDINARY, text, *ORDINARY], where), *ENTITIES[150:]]
    assert may_hold_secret(value)
    assert first_secret(value, "entities") is not None
    assert secret_path(value) is not None


def test_ordinary_batches_pass_the_joined_prefilter():
    assert not may_hold_secret(ENTITIES)
    assert first_secret(nested(ORDINARY, "keys"), "entities") is None  # some of them open the prefilter: the scan still passes them
    assert first_secret(ENTITIES, "entities") is None


@pytest.mark.parametrize("family", list(text_families()))
def test_the_joined_prefilter_never_passes_a_value_the_scan_would_flag(family):
    @settings(max_examples=150, deadline=None)
    @given(st.lists(text_families()[family], min_size=1, max_size=5), st.sampled_from(["items", "values", "keys"]))
    def check(texts, where):
        value = nested(texts, where)
        assert list(strings_in(value)).count(texts[0]) >= 1
        if not may_hold_secret(value):
            assert secret_path(value) is None, texts

    check()


class AcmeKeys:
    "A plugin pattern anchored at the start of a string: joined text would hide it, so plugins turn the shortcut off."

    @hookimpl
    def register_secret_patterns(self, register):
        register("Acme anchored key", re.compile(r"^acme-[0-9]{6}$"))


def test_a_plugin_pattern_is_tried_on_each_string_alone():
    plugins.plugin_manager().register(AcmeKeys(), "acme-anchored")
    try:
        assert may_hold_secret(ENTITIES)
        with pytest.raises(InvalidInput, match="Acme anchored key"):
            Memory.open(":memory:").create_entities([*ENTITIES[:5], {"name": "x", "entityType": "t", "observations": ["acme-123456"]}])
    finally:
        plugins.plugin_manager().unregister(name="acme-anchored")
