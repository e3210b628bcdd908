"""Serve the top-level ``templates`` folder to Datasette, with the filters its pages show stored text and times through."""

from datasette import hookimpl
from jinja2 import ChoiceLoader, FileSystemLoader

from .resources import resource_path
from .stored_text import has_hidden, stored
from .times import is_stored_time, when


@hookimpl
def prepare_jinja2_environment(env, datasette):
    env.loader = ChoiceLoader([FileSystemLoader(str(resource_path("templates"))), env.loader])
    env.filters["stored"] = stored
    env.filters["when"] = when
    env.tests["hiding_characters"] = has_hidden
    env.tests["stored_time"] = is_stored_time
