"""What a job id alone can do: read, cancel or retry the job, in whichever queue holds it (DESIGN rule 13)."""

from __future__ import annotations

from ..core import locate
from ..core.logical import JobRef
from ..core.records import Job
from ..errors import JobNotFound


def get_job(job: str | JobRef, queue: str | None = None) -> Job:
    """Read a job by its id (or ``JobRef``) from whichever queue holds it, partitioned or not.

    queue: look there only. JobNotFound when no queue holds it; AmbiguousJobId when a ``job_id`` you
    chose is in several queues and none is named (see ``core.locate``: one round trip, or two).
    """
    return locate.read(job, queue)


def cancel(job: str | JobRef, queue: str | None = None) -> bool:
    """Cancel a scheduled, ready or running job by its id (or ``JobRef``), in whichever queue holds it.

    False when it had finished or is in no queue; AmbiguousJobId as ``get_job`` raises it.
    """
    try:
        q, job_id = locate.holder(job, queue)
    except JobNotFound:
        return False
    return q.cancel([job_id])[0] == "ok"


def retry(job: str | JobRef, queue: str | None = None) -> bool:
    """Run a dead or cancelled job again with a fresh budget of attempts, in whichever queue holds it; False
    in any other state, or in no queue.

    A job of a flow resumes the flow where it failed: the jobs that died because of it (the chain's later
    steps, ``after=`` children, a batch's or chord's callbacks, and theirs) wait for it again.
    """
    try:
        q, job_id = locate.holder(job, queue)
    except JobNotFound:
        return False
    return q.admin.retry([job_id])[0] == "ok"
