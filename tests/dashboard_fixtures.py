"""Users and queue contents the dashboard tests share."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from emq.core.engine import Queue
from emq.core.records import Outcome
from tests import jobs

PASSWORD = "pw-for-tests-only"


def page_url(page: str, /, **query: str) -> str:
    return reverse(f"admin:emq_dashboard_{page}") + ("?" + urlencode(query) if query else "")


def action_url(name: str) -> str:
    return reverse("admin:emq_dashboard_action", args=[name])


def web_as(user=None) -> Client:
    """A test client logged in as user (anonymous without one)."""
    web = Client()
    if user is not None:
        web.force_login(user)
    return web


def make_user(username: str, *, staff: bool = True, perms: tuple[str, ...] = (), superuser: bool = False) -> User:
    user = User.objects.create_user(username, password=PASSWORD, is_staff=staff, is_superuser=superuser)
    for codename in perms:
        user.user_permissions.add(Permission.objects.get(content_type__app_label="emq", codename=codename))
    return user


def make_users() -> dict[str, User]:
    """A view-only operator, a full operator, staff without permission and a non-staff user with both."""
    return {
        "viewer": make_user("viewer", perms=("view_dashboard",)),
        "operator": make_user("operator", perms=("view_dashboard", "change_dashboard")),
        "staff": make_user("staff"),
        "outsider": make_user("outsider", staff=False, perms=("view_dashboard", "change_dashboard")),
    }


def fill(queue: str = "default") -> dict[str, list[str]]:
    """Put jobs of every state in a queue: ready, active, scheduled, completed, dead."""
    q = Queue(queue)
    ids = {}
    # The claim below takes a1, b1, a2, a3 (the ring alternates, then drains the lone lane): a4, a5 stay ready.
    a = jobs.add.using(queue=queue, group="tenant-a").enqueue_many([((i, i), {}) for i in range(5)])
    jobs.add.using(queue=queue, group="tenant-b").enqueue(7, 8)
    ids["scheduled"] = [jobs.add.using(queue=queue).enqueue_in(3600, 1, 2).id]
    claimed = q.bclaim(4, "worker-test")
    q.finish([Outcome(claimed[0].id, claimed[0].token, "completed", "3")])
    q.finish([Outcome(claimed[1].id, claimed[1].token, "dead", "ValueError: broken\nTraceback: line 1")])
    ids["completed"], ids["dead"] = [claimed[0].id], [claimed[1].id]
    ids["active"] = [c.id for c in claimed[2:]]
    ids["ready"] = [r.id for r in a[3:]]
    return ids
