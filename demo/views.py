"""Demo views: enqueue a job and return at once."""

from __future__ import annotations

from django.http import JsonResponse
from django.views.decorators.http import require_POST

from . import jobs


@require_POST
def enqueue_add(request):
    """Enqueue ``add`` with the numbers posted; answers with the job's id right away."""
    a, b = int(request.POST.get("a", 1)), int(request.POST.get("b", 2))
    ref = jobs.add.enqueue(a, b)
    return JsonResponse({"job": ref.id, "queue": ref.queue}, status=202)
