"""Serve the top-level ``templates`` folder to Datasette, with the filters its pages show stored text and times through."""

from datasette import hookimpl
from jinja2 import ChoiceLoader, FileSystemLoader

from .resources import resource_path
from .stored_text import has_hidden, stored
from .times import is_stored_time, when


@hookimpl
def prepare_jinja2_environment(env, datasette):
    # after Datasette's own loader, which looks in --template-dir first: a user's template wins over ours,
    # as over any plugin's (ours are all named memory_*, so none stands in for one of Datasette's)
    env.loader = ChoiceLoader([env.loader, FileSystemLoader(str(resource_path("templates")))])
    env.filters["stored"] = stored
    env.filters["when"] = when
    env.tests["hiding_characters"] = has_hidden
    env.tests["stored_time"] = is_stored_time
