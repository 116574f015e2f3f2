"""Getting started: a job, a view that enqueues it, the shell, the result (run by tests/test_docs_examples.py)."""

import sys

from emq.testing import run_until_empty

# --8<-- [start:job]
# shop/jobs.py — every worker imports the jobs module of each installed app
import emq


@emq.job(max_attempts=5)
def send_welcome(user_id: int) -> str:
    # Look the user up, render the mail, send it. What the job returns is kept as its result.
    return f"welcome mail sent to user {user_id}"
# --8<-- [end:job]


# --8<-- [start:view]
# shop/views.py
from django.http import JsonResponse


def signup(request):
    user_id = 42  # the user your form just created
    ref = send_welcome.enqueue(user_id)  # returns at once: the job is stored in Valkey
    return JsonResponse({"job": ref.id}, status=202)
# --8<-- [end:view]


def example() -> None:
    sys.modules.setdefault("shop.jobs", sys.modules[__name__])  # this file plays the guide's shop/jobs.py
    # --8<-- [start:shell]
    from shop.jobs import send_welcome

    ref = send_welcome.enqueue(42)
    print(ref)  # JobRef(id='3f0c…', queue='default')
    # --8<-- [end:shell]
    assert repr(ref) == f"JobRef(id={ref.id!r}, queue='default')"
    run_until_empty()  # in the guide, the worker of the next step runs it
    # --8<-- [start:result]
    import emq

    job = emq.get_job(ref.id)
    print(job.state, job.attempts, job.result)  # completed 1 welcome mail sent to user 42
    # --8<-- [end:result]
    assert (job.state, job.attempts, job.result) == ("completed", 1, "welcome mail sent to user 42")
    assert signup(None).status_code == 202
