"""Encryption at rest: keys, encrypted jobs, reading them back (run by tests/test_encryption.py)."""

import emq
from emq.testing import run_until_empty

# --8<-- [start:settings]
import os

# settings.py: the keys come from the environment (never from the repository), newest first
EMQ_ENCRYPTION_KEYS = [key for key in os.environ.get("EMQ_ENCRYPTION_KEYS", "").split(",") if key]
EMQ_ENCRYPT = False  # True: every job of the project is encrypted, not only those that ask
# --8<-- [end:settings]


# --8<-- [start:jobs]
@emq.job(encrypt=True)
def charge_card(card_number: str, amount_cents: int) -> dict:
    ...  # call the payment provider
    return {"last4": card_number[-4:], "charged": amount_cents}


@emq.job
def send_receipt(email: str) -> None:
    ...
# --8<-- [end:jobs]


def new_key() -> str:
    # --8<-- [start:generate]
    from cryptography.fernet import Fernet

    key = Fernet.generate_key().decode()  # 44 characters; store it where SECRET_KEY is stored
    # --8<-- [end:generate]
    return key


def example() -> None:
    # --8<-- [start:use]
    ref = charge_card.enqueue("4111111111111111", 1999)
    # The server holds ciphertext only: the job's kwargs field is "enc:gAAAAA…", no card number.
    send_receipt.using(encrypt=True).enqueue("ada@example.com")  # one call encrypted, the job's others not
    run_until_empty()
    job = emq.get_job(ref.id)
    print(job.encrypted, job.args, job.result)
    # True ['4111111111111111', 1999] {'last4': '1111', 'charged': 1999}
    # --8<-- [end:use]
    assert job.result == {"last4": "1111", "charged": 1999} and job.encrypted
