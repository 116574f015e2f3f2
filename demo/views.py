"""Demo views: enqueue a job (``@emq.job``) or a Django task (``@task``) and return at once."""

from __future__ import annotations

from django.http import Http404, JsonResponse
from django.views.decorators.http import require_GET, require_POST

from emq.contrib.tasks.compat import TaskResultDoesNotExist, TaskResultStatus

from . import jobs, tasks


@require_POST
def enqueue_add(request):
    """Enqueue ``add`` with the numbers posted; answers with the job's id right away."""
    a, b = int(request.POST.get("a", 1)), int(request.POST.get("b", 2))
    ref = jobs.add.enqueue(a, b)
    return JsonResponse({"job": ref.id, "queue": ref.queue}, status=202)


@require_POST
def enqueue_word_count(request):
    """Enqueue the ``word_count`` task through Django's Tasks API; answers with the result's id."""
    result = tasks.word_count.enqueue(request.POST.get("text", ""))
    return JsonResponse({"task": result.id, "status": result.status}, status=202)


@require_GET
def task_status(request, result_id: str):
    """Read a task's result: its status, and its return value once it succeeded."""
    try:
        result = tasks.word_count.get_result(result_id)
    except TaskResultDoesNotExist:
        raise Http404(f"no task result {result_id}") from None
    body = {"task": result.id, "status": result.status, "attempts": result.attempts}
    if result.status == TaskResultStatus.SUCCESSFUL:
        body["value"] = result.return_value
    return JsonResponse(body)
