"""``manage.py emq <subcommand>``: status, jobs, show, retry, delete, purge, cancel, pause, resume, enqueue, server,
rekey.

Thin: parse, call the subcommand's function (``emq.cli``), print its table or --json, exit 0 or 1.
"""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError

from emq.errors import EmqError


class Command(BaseCommand):
    help = "Operate emq from a terminal or a script: every subcommand prints a table, or JSON with --json."

    def add_arguments(self, parser) -> None:
        from emq import cli

        subparsers = parser.add_subparsers(dest="subcommand", metavar="SUBCOMMAND", required=True)
        for sub in sorted(cli.COMMANDS.values(), key=lambda c: c.name):
            p = subparsers.add_parser(sub.name, help=sub.help, description=sub.help)
            for arg in sub.args:
                p.add_argument(*arg.flags, **arg.options)
            p.add_argument("--json", action="store_true", help="print JSON instead of a table")

    def handle(self, *args, **options) -> None:
        from emq import cli

        io = cli.IO(self.stdout, self.stderr, sys.stdin)
        try:
            result = cli.COMMANDS[options["subcommand"]].run(options, io)
        except EmqError as exc:
            raise CommandError(cli.printable(str(exc))) from None
        if not result.shown:
            cli.show(result, io, options["json"])
        if not result.ok:
            raise CommandError(cli.printable(result.failure or "failed"))
