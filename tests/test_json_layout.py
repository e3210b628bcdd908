"""Settings written back in their own layout: an edit changes only the bytes of what it changed, and undoing it gives the file back."""

import json

from hypothesis import given, settings, strategies as st

from datasette_memory.clients.json_layout import dump_like

scalars = st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
                      max_leaves=20)
objects = st.dictionaries(st.text(max_size=6), values, max_size=5)
# the layouts people and tools write: JSON.stringify(x, null, 2), four spaces, tabs, one line, Python's default
layouts = st.sampled_from([
    {"indent": 2}, {"indent": 4}, {"indent": "\t"}, {}, {"separators": (",", ":")}, {"indent": 2, "ensure_ascii": False},
])


def layout(data, options, newline):
    return json.dumps(data, **options) + ("\n" if newline else "")


@settings(max_examples=300, deadline=None)
@given(objects, layouts, st.booleans())
def test_unchanged_settings_keep_every_byte(data, options, newline):
    text = layout(data, options, newline)
    assert dump_like(json.loads(text), text) == text


@settings(max_examples=300, deadline=None)
@given(objects, objects, layouts, st.booleans())
def test_whatever_the_edit_the_result_is_the_new_settings(data, new, options, newline):
    text = layout(data, options, newline)
    assert json.loads(dump_like(new, text)) == new


@settings(max_examples=300, deadline=None)
@given(objects, st.text(max_size=6), values, layouts, st.booleans())
def test_a_key_added_then_removed_gives_the_file_back(data, key, value, options, newline):
    data.pop(key, None)
    text = layout(data, options, newline)
    added = dump_like({**data, key: value}, text)
    assert json.loads(added) == {**data, key: value}
    assert dump_like(data, added) == text


@settings(max_examples=300, deadline=None)
@given(objects, st.lists(values, max_size=3), values, layouts)
def test_an_item_appended_to_a_list_then_removed_gives_the_file_back(data, items, item, options):
    data["list"] = items
    text = layout(data, options, True)
    added = dump_like({**data, "list": [*items, item]}, text)
    assert json.loads(added)["list"] == [*items, item]
    assert dump_like(data, added) == text


def test_an_edit_changes_only_its_own_lines():
    text = '{\n  "permissions": {"allow": ["Bash(npm test)", "Read"]},\n  "hooks": {\n    "Stop": []\n  }\n}\n'
    edited = dump_like({"permissions": {"allow": ["Bash(npm test)", "Read"]}, "hooks": {"Stop": [], "SessionStart": [{"a": 1}]}}, text)
    assert edited == (
        '{\n  "permissions": {"allow": ["Bash(npm test)", "Read"]},\n  "hooks": {\n    "Stop": [],\n'
        '    "SessionStart": [\n      {\n        "a": 1\n      }\n    ]\n  }\n}\n'
    )
