"""Testing your jobs with emq.testing: pytest, Django's TestCase, eager mode (run by tests/test_docs_examples.py)."""

import emq

sent: list[str] = []


@emq.job
def send_welcome(email: str) -> None:
    sent.append(email)


def signup(email: str) -> None:
    """The code under test: it enqueues a job."""
    send_welcome.enqueue(email)


# --8<-- [start:conftest]
# conftest.py (at the root of your tests)
pytest_plugins = ["emq.testing"]
# --8<-- [end:conftest]


# --8<-- [start:pytest]
from emq.testing import assert_enqueued, run_until_empty


def test_signup_sends_welcome(emq_isolated):
    signup("ada@example.com")

    job = assert_enqueued(send_welcome, args=["ada@example.com"])  # waiting, with these arguments
    run_until_empty()  # run everything in-process, like a worker with --burst
    assert emq.get_job(job.id).state == "completed"
# --8<-- [end:pytest]


# --8<-- [start:testcase]
from django.test import TestCase

from emq.testing import EmqTestMixin


class SignupTests(EmqTestMixin, TestCase):
    def test_signup_sends_welcome(self):
        signup("grace@example.com")
        assert_enqueued(send_welcome, args=["grace@example.com"])
        run_until_empty()
        self.assertIn("grace@example.com", sent)
# --8<-- [end:testcase]


# --8<-- [start:eager]
from emq.testing import eager


def test_signup_in_eager_mode():
    with eager():  # or EMQ_EAGER = True in your test settings
        signup("linus@example.com")  # send_welcome ran inline, before enqueue returned
    assert "linus@example.com" in sent
# --8<-- [end:eager]
