"""``manage.py emq_worker``: run jobs from one or more queues."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from emq.core import config
from emq.errors import EmqError
from emq.jobs import autodiscover
from emq.management import options as check
from emq.runtime.order import QueueOrder, parse


class Command(BaseCommand):
    help = (
        "Run emq jobs: claim them in batches from the given queues, run them on a thread pool, "
        "and finish them in batches. SIGTERM/SIGINT stop claiming and let running jobs finish "
        "within the grace period (a second signal cuts it short). An unreachable server at start "
        "is waited for, saying so once (EMQ_STARTUP_WAIT bounds the wait). The worker runs in a child "
        "process that a supervisor restarts if it dies (--no-supervise: in this process)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--queues", default=None,
                            help="comma-separated queues (default: EMQ_DEFAULT_QUEUE), served in turn; "
                                 "high:5,low:1 weights their claims 5:1")
        parser.add_argument("--strict", action="store_true",
                            help="serve --queues in order: a queue only when all before it have nothing ready")
        parser.add_argument("--concurrency", type=int, default=10, help="jobs run at once (threads); default 10")
        parser.add_argument("--batch", type=int, default=None, help="most jobs claimed per round trip")
        parser.add_argument("--prefetch", type=int, default=None,
                            help="most jobs claimed beyond the free threads, so that they stay busy while the next "
                                 "claim is on its way; sized to what one round trip ends, so jobs longer than a "
                                 "round trip get none (default: --concurrency; 0: never)")
        parser.add_argument("--burst", action="store_true", help="drain the queues, then exit 0")
        parser.add_argument("--no-pump", action="store_true", help="do not run a Pump thread in this worker")
        parser.add_argument("--grace", type=float, default=None, help="seconds running jobs get on stop")
        parser.add_argument(
            "--processes", type=int, default=1,
            help="worker processes, each with its own thread pool, under one supervisor that restarts them",
        )
        parser.add_argument(
            "--no-supervise", action="store_true",
            help="run the one worker in this process, with no supervisor to restart it: for a process manager "
                 "that restarts it itself (systemd Restart=, Kubernetes); exit code 75 then asks for a restart",
        )
        parser.add_argument("--metrics-port", type=int, default=None,
                            help="serve Prometheus histograms of this worker's jobs on this port (EMQ_METRICS_PORT)")

    def handle(self, *args, **options) -> None:
        from emq.models import row_sync
        from emq.runtime import exits, logs, startup
        from emq.runtime.worker import Worker

        queues = _checked(options)
        metrics_port = options["metrics_port"] or config.get("EMQ_METRICS_PORT")
        check.port("--metrics-port", metrics_port)

        def work() -> int:
            # A child restarted while the server is away (a failover, a restart) waits for it as the command
            # did, instead of dying on its first connect and being restarted with backoff, traceback and all.
            if startup.supervised and not startup.wait_for_server():
                return exits.STOPPED
            worker = Worker(
                queues,
                concurrency=options["concurrency"],
                batch=options["batch"],
                burst=options["burst"],
                pump=not options["no_pump"],
                grace=options["grace"],
                strict=options["strict"],
                prefetch=options["prefetch"],
                rows=row_sync(),
            )
            return worker.run()

        try:
            logs.setup()
            startup.stacks_on_signal()  # kill -USR1: every thread's stack (and the supervisor's, before a kill)
            autodiscover()
            if metrics_port:
                from emq.metrics.exporter import serve

                serve(int(metrics_port), forked=not options["no_supervise"])
            if startup.wait_for_server():
                startup.freeze_heap()
                _run(work, options)
        except EmqError as exc:
            raise CommandError(str(exc)) from None


def _checked(options: dict) -> list[str]:
    """The --queues asked for, once every option is checked: a bad one is refused before anything starts."""
    queues = check.queue_names(options["queues"])
    try:
        QueueOrder([w for w in parse(queues)[1].values()], options["strict"])
    except EmqError as exc:
        raise CommandError(str(exc)) from None
    check.at_least("--concurrency", options["concurrency"], 1)
    check.at_least("--processes", options["processes"], 1)
    check.at_least("--batch", options["batch"], 1)
    check.at_least("--grace", options["grace"], 0)
    check.at_least("--prefetch", options["prefetch"], 0)
    if options["no_supervise"] and options["processes"] > 1:
        raise CommandError(f"--no-supervise runs one worker in this process: drop it, or --processes "
                           f"{options['processes']} (whose worker processes a supervisor keeps up)")
    return queues


def _run(work, options: dict) -> None:
    """One worker in this process (--no-supervise), or --processes of them under a supervisor that
    restarts them; the exit code says why it stopped (``emq.runtime.exits``)."""
    if options["no_supervise"]:
        code = work()
    else:
        from emq.runtime.supervisor import Supervisor

        grace = config.get("EMQ_GRACE") if options["grace"] is None else options["grace"]
        code = Supervisor(work, options["processes"], grace=grace).run()
    if code:  # a worker that drained to be recycled, or one the supervisor had to kill: say so to the caller
        raise SystemExit(code)
