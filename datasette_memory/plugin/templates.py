"""Serve the top-level ``templates`` folder to Datasette."""

from datasette import hookimpl
from jinja2 import ChoiceLoader, FileSystemLoader

from .resources import resource_path


@hookimpl
def prepare_jinja2_environment(env, datasette):
    env.loader = ChoiceLoader([FileSystemLoader(str(resource_path("templates"))), env.loader])
