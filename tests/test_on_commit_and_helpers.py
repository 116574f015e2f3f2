"""Transactional enqueue, and the test helpers emq ships for projects (fixture, mixin, eager, asserts)."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.test import SimpleTestCase

import emq
from emq.core.engine import Queue
from emq.testing import EmqTestMixin, assert_enqueued, eager, run_until_empty
from tests import jobs


class Boom(Exception):
    pass


@pytest.mark.django_db(transaction=True)
def test_enqueue_on_commit_mints_only_when_the_transaction_commits(emq_env):
    """Commit: one job, minted after the block; the ref was known inside it."""
    with transaction.atomic():
        ref = jobs.add.enqueue_on_commit(1, 2)
        assert Queue("default").counts().ready == 0
    assert emq.get_job(ref.id).args == [1, 2]
    assert Queue("default").counts().ready == 1


@pytest.mark.django_db(transaction=True)
def test_rollback_mints_nothing(emq_env):
    """Rollback: no job, for enqueue_on_commit and for .using(on_commit=True) alike."""
    with pytest.raises(Boom), transaction.atomic():
        jobs.add.enqueue_on_commit(1, 2)
        jobs.add.using(on_commit=True).enqueue_in(5, 3, 4)
        raise Boom
    counts = Queue("default").counts()
    assert (counts.ready, counts.scheduled) == (0, 0)


@pytest.mark.django_db(transaction=True)
def test_non_json_argument_fails_at_the_call_not_at_commit(emq_env):
    with transaction.atomic(), pytest.raises(TypeError, match="not JSON"):
        jobs.add.enqueue_on_commit(object(), 1)


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_on_commit_mints_at_once(emq_env):
    ref = jobs.add.using(on_commit=True).enqueue(2, 2)
    assert emq.get_job(ref.id).state == "ready"


def test_assert_enqueued_names_what_it_saw(emq_isolated):
    jobs.add.enqueue(1, 2)
    assert_enqueued(jobs.add, args=[1, 2])
    with pytest.raises(AssertionError, match=r"seen: args=\[1, 2\]"):
        assert_enqueued(jobs.add, args=[9, 9])
    run_until_empty()
    with pytest.raises(AssertionError, match="seen: none"):
        assert_enqueued(jobs.add)


def test_eager_block_runs_jobs_inline(emq_isolated):
    with eager():
        ref = jobs.touch.enqueue("/dev/null", text="inline")
    with pytest.raises(emq.JobNotFound):
        emq.get_job(ref.id)


@pytest.fixture
def suite_server(request, embedded_url):
    request.cls.emq_url = embedded_url


@pytest.mark.usefixtures("suite_server")
class MixinTests(EmqTestMixin, SimpleTestCase):
    """The TestCase mixin gives each test its own prefix on a real server."""

    def test_each_test_has_its_own_prefix(self):
        from django.conf import settings

        self.assertEqual(settings.EMQ_PREFIX, self.emq_prefix)
        self.assertTrue(self.emq_prefix.startswith("emqtest-"))
        jobs.add.enqueue(3, 4)
        assert_enqueued(jobs.add, args=[3, 4])
        run_until_empty()
        self.assertEqual(Queue("default").counts().completed, 1)


@pytest.mark.django_db(transaction=True)
def test_eager_with_on_commit_runs_at_commit_only(emq_isolated, tmp_path):
    out = tmp_path / "ran"
    with eager():
        with pytest.raises(Boom), transaction.atomic():
            jobs.touch.enqueue_on_commit(str(out), text="rolled back")
            raise Boom
        with transaction.atomic():
            jobs.touch.enqueue_on_commit(str(out), text="committed")
            assert not out.exists()
    assert out.read_text() == "committed\n"


@pytest.mark.django_db(transaction=True)
def test_enqueue_on_commit_setting_makes_every_enqueue_wait_for_the_commit(emq_env, settings):
    """EMQ_ENQUEUE_ON_COMMIT: enqueue, enqueue_in and enqueue_many inside a transaction mint at commit;
    on_commit=False still mints at once; a rollback mints nothing."""
    settings.EMQ_ENQUEUE_ON_COMMIT = True
    with transaction.atomic():
        now = jobs.add.enqueue(1, 2)
        later = jobs.add.enqueue_in(60, 3, 4)
        many = jobs.add.enqueue_many([((5, 6), {}), ((7, 8), {})])
        at_once = jobs.add.using(on_commit=False).enqueue(9, 9)
        assert emq.get_job(at_once.id).state == "ready" and Queue("default").counts().ready == 1
        assert now.enqueued_at is None
    counts = Queue("default").counts()
    assert (counts.ready, counts.scheduled) == (4, 1) and emq.get_job(now.id).args == [1, 2]
    assert [emq.get_job(r.id).args for r in many] == [[5, 6], [7, 8]] and emq.get_job(later.id).state == "scheduled"
    with pytest.raises(Boom), transaction.atomic():
        jobs.add.enqueue(0, 0)
        raise Boom
    assert Queue("default").counts().ready == 4


@pytest.mark.django_db(transaction=True)
def test_enqueue_on_commit_setting_outside_a_transaction_mints_at_once(emq_env, settings):
    settings.EMQ_ENQUEUE_ON_COMMIT = True
    ref = jobs.add.enqueue(2, 2)
    assert ref.enqueued_at is not None and emq.get_job(ref.id).state == "ready"


@pytest.mark.django_db(transaction=True)
def test_without_the_setting_enqueue_inside_a_transaction_mints_at_once(emq_env):
    """The default: an @emq.job exists when enqueue returns, transaction or not (on_commit= per job)."""
    with transaction.atomic():
        ref = jobs.add.enqueue(2, 2)
        assert emq.get_job(ref.id).state == "ready"


@pytest.mark.django_db
def test_run_until_empty_keeps_the_tests_transaction_and_connection(emq_env):
    """run_until_empty inside a test's transaction: its Pump's row sync, which starts in the caller's thread,
    closed that thread's connection (its autocommit differs in a transaction), and on PostgreSQL every later
    query of the test, and of the next tests, failed with "the connection is closed"."""
    from django.contrib.auth.models import User

    User.objects.create(username="made-before")
    jobs.add.enqueue(1, 2)
    run_until_empty()
    assert User.objects.filter(username="made-before").exists()
