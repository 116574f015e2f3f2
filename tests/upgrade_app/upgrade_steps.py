"""What tests/test_upgrade.py has each side do in a process of its own: ``python -m upgrade_steps <step>``.

Each step migrates first, then prints one JSON line. ``mint`` (old side): a job of every kind;
``unique`` (new side): one more enqueue under the old job's unique key; ``after ID`` (new side): retry
the dead job ID (``manage.py emq retry``) and mint one more job. Only 0.2.0's public API and commands,
so that both sides run it.
"""

import json
import sys

import django

import emq


def mint() -> dict:
    from upgrade_jobs import flaky, held, plain, step, summary

    emq.set_rate_limit("upg-rate", 2, per=1.0, group="limited")
    unique = plain.using(unique_for=600, unique_key="upgrade-unique")
    first, again = unique.enqueue("unique"), unique.enqueue("unique")
    parent = plain.enqueue("after-parent")
    batch = emq.batch([plain.s("batch"), plain.s("batch")], on_complete=summary.s())
    prio = [plain.using(queue="upg-prio", priority=p).enqueue("prio", i) for i, p in enumerate(PRIORITIES)]
    return {
        "ready": [plain.enqueue("ready").id for _ in range(5)],
        "scheduled": [plain.enqueue_in(3, "scheduled").id],
        "after-parent": [parent.id],
        "after-child": [plain.using(after=[parent]).enqueue("after-child").id],
        "chain": [emq.chain(step.s(1), step.s(), step.si(100)).id],  # the last step's
        "batch": [m.id for m in batch.members],
        "batch-callback": [batch.callback.id],
        "unique": [first.id],
        "unique-again": {"created": again.created, "id": again.id},
        "rate": [plain.using(queue="upg-rate", group="limited").enqueue("rate", i).id for i in range(6)],
        "prio": [r.id for r in prio],
        "dead": [flaky.using(max_attempts=1).enqueue("dead").id],
        "retried": [flaky.enqueue("retried").id],
        "lease": [held.enqueue("lease").id],
        "late": [plain.using(queue="upg-late").enqueue("late").id],
    }


def unique() -> dict:
    from upgrade_jobs import plain

    again = plain.using(unique_for=600, unique_key="upgrade-unique").enqueue("unique")
    return {"created": again.created, "id": again.id}


def after(dead: str) -> dict:
    from django.core.management import call_command
    from upgrade_jobs import plain

    call_command("emq", "retry", dead, "--queue", "upg-fail")
    return {"id": plain.enqueue("after-prune").id}


PRIORITIES = [0, 5, -3, 10, 1, 5]  # the order they are minted in; higher runs first, equals in this order
STEPS = {"mint": mint, "unique": unique, "after": after}

if __name__ == "__main__":
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    print(json.dumps(STEPS[sys.argv[1]](*sys.argv[2:])))
