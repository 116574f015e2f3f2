"""A job of a "new release": the deploy drill's old-code workers lack it (their EMQ_IMPORTS is tests.jobs).

Only tests/test_deploys.py imports this module in the test process, and a "new" worker process gets it
through EMQ_IMPORTS; tests.jobs must never import it, or every worker would know the name.
"""

from __future__ import annotations

import emq


@emq.job(max_attempts=1)
def fresh(n):
    """A job only the new code defines; one attempt, so a hold that spent one would leave it dead."""
    return n * 2
