"""The HTTP API guide: mounting the API, its tokens, and the job its curl examples call.

tests/test_api.py registers ``send_invoice`` under the name the page's curl examples use
(``billing.jobs.send_invoice``) and runs every curl command of the page against a live server.
"""

# --8<-- [start:urls]
from django.urls import include, path

urlpatterns = [
    # ... the project's own URLs
    path("emq/api/", include("emq.api.urls")),
]
# --8<-- [end:urls]

# --8<-- [start:settings]
import os

EMQ_API_TOKENS = {
    "deploy-bot": {"token": os.environ.get("DEPLOY_BOT_TOKEN", ""), "scopes": ["read", "enqueue"]},
    "on-call": {"token": os.environ.get("ON_CALL_TOKEN", ""), "scopes": ["read", "control"]},
}
# --8<-- [end:settings]

# --8<-- [start:job]
import emq


@emq.job
def send_invoice(invoice_id: int, email: str | None = None) -> str:
    return f"invoice {invoice_id} sent to {email or 'the account owner'}"
# --8<-- [end:job]
