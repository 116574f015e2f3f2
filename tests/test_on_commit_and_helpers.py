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
