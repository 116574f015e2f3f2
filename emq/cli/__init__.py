"""``manage.py emq``: the operator's command line, one subcommand a function (see ``registry``).

The management command only parses and reports; every subcommand here reads through the engine
and the registries, and changes state only through engine methods (Lua scripts).
"""

from . import bulk, control, enqueue, jobs, rekey, server, status, workers  # noqa: F401  (each registers its subcommands)
from .registry import COMMANDS, IO, Result, Subcommand
from .render import printable, show

__all__ = ["COMMANDS", "IO", "Result", "Subcommand", "printable", "show"]
