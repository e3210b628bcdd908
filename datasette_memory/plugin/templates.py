"""Serve the top-level ``templates`` folder to Datasette, with the filter its pages show stored text through."""

from datasette import hookimpl
from jinja2 import ChoiceLoader, FileSystemLoader

from .resources import resource_path
from .stored_text import has_hidden, stored


@hookimpl
def prepare_jinja2_environment(env, datasette):
    env.loader = ChoiceLoader([FileSystemLoader(str(resource_path("templates"))), env.loader])
    env.filters["stored"] = stored
    env.tests["hiding_characters"] = has_hidden
