"""Recurrence mistakes caught where they are made: arguments at save, unknown jobs in the list and the
Pump, and "Run now" on a disabled row asks first."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError

from emq.core.engine import Queue
from emq.models import Recurrence
from emq.scheduling import repeat
from emq.scheduling.definitions import definition
from tests import jobs  # noqa: F401  (registers tests.jobs.*)
from tests.procs import server_ms

pytestmark = pytest.mark.django_db(transaction=True)


def row(name: str, job: str = "tests.jobs.add", **fields) -> Recurrence:
    r = Recurrence(name=name, job=job, timezone="UTC", every=timedelta(seconds=1), args=[1, 2])
    for k, v in fields.items():
        setattr(r, k, v)
    return r


@pytest.mark.parametrize("args, kwargs, why", [
    ([1], {}, "missing a required argument: 'b'"),
    ([1, 2, 3], {}, "too many positional arguments"),
    ([1, 2], {"c": 3}, "unexpected keyword argument 'c'"),
])
def test_arguments_that_do_not_fit_the_job_are_refused_at_save_with_the_reason(emq_env, args, kwargs, why):
    with pytest.raises(ValidationError) as caught:
        row("bad", args=args, kwargs=kwargs).full_clean()
    assert why in caught.value.message_dict["args"][0]
    assert "tests.jobs.add(a, b)" in caught.value.message_dict["args"][0]
    row("good", args=[1], kwargs={"b": 2}).full_clean()


def test_an_unknown_job_is_refused_at_save_and_shown_as_not_found_in_the_list(emq_env, admin_client):
    with pytest.raises(ValidationError, match="No job registered"):
        row("ghost", job="tests.jobs.gone").full_clean()
    Recurrence.objects.create(name="ghost", job="tests.jobs.gone", every=timedelta(hours=1), timezone="UTC")
    Recurrence.objects.create(name="fine", job="tests.jobs.add", every=timedelta(hours=1), timezone="UTC",
                              args=[1, 2])
    page = admin_client.get("/admin/emq/recurrence/").content.decode()
    assert page.count("job not found") == 1 and "tests.jobs.gone" in page


def test_the_pump_skips_an_unknown_job_with_one_warning_per_change(emq_env, client, caplog):
    """Saved without full_clean: its occurrences move on, none is minted, one warning until the row changes."""
    q = Queue("default")
    ghost = Recurrence.objects.create(name="ghost", job="tests.jobs.gone", every=timedelta(hours=1), timezone="UTC")
    caplog.set_level(logging.WARNING, logger="emq.repeat")

    def due_now_and_pump() -> None:  # as if its next occurrence had come: the Pump's step that follows
        client.zadd(q.keys.repeat_next, {"ghost": server_ms(client) - 10})
        repeat.mint_due(q)

    for _ in range(3):
        due_now_and_pump()
    warnings = [r.getMessage() for r in caplog.records if "ghost" in r.getMessage()]
    assert len(warnings) == 1 and 'no job registered as "tests.jobs.gone"' in warnings[0], warnings
    assert client.zscore(q.keys.repeat_next, "ghost") > server_ms(client), "its schedule moved on"
    c = q.counts()
    assert (c.ready, c.scheduled, c.dead) == (0, 0, 0) and int(client.hget(q.keys.stats, "repeat_skipped")) == 3
    ghost.args = [1]
    ghost.save()  # a change of the row warns again, once
    for _ in range(2):
        due_now_and_pump()
    assert len([r for r in caplog.records if "ghost" in r.getMessage()]) == 2


def test_run_now_refuses_an_unknown_job(emq_env):
    from emq.errors import NotRegistered

    r = Recurrence.objects.create(name="ghost", job="tests.jobs.gone", every=timedelta(hours=1), timezone="UTC")
    with pytest.raises(NotRegistered):
        repeat.run_now(Queue("default"), definition(r))


def test_run_now_on_a_disabled_row_asks_first(emq_env, admin_client):
    on = Recurrence.objects.create(name="on", job="tests.jobs.add", every=timedelta(hours=1), timezone="UTC",
                                   args=[1, 2])
    off = Recurrence.objects.create(name="off", job="tests.jobs.add", every=timedelta(hours=1), timezone="UTC",
                                    args=[1, 2], enabled=False)
    form = {"action": "run_now", "_selected_action": [on.pk, off.pk]}
    asked = admin_client.post("/admin/emq/recurrence/", form)
    page = asked.content.decode()
    assert asked.status_code == 200 and "Run disabled recurrences now?" in page and "<code>off</code>" in page
    assert Queue("default").counts().ready == 0
    done = admin_client.post("/admin/emq/recurrence/", {**form, "confirmed": "yes"}, follow=True)
    assert "2 jobs minted" in done.content.decode() and Queue("default").counts().ready == 2
    assert not Recurrence.objects.get(name="off").enabled
    admin_client.post("/admin/emq/recurrence/", {"action": "run_now", "_selected_action": [on.pk]})
    assert Queue("default").counts().ready == 3, "an enabled row runs at once, as before"
