"""Drive a Wagtail site's admin as an editor would, with Django's test client (tests/test_wagtail.py).

Runs inside a site that ``wagtail start`` made, under its settings (DJANGO_SETTINGS_MODULE):

    python wagtail_driver.py setup    # makemigrations home, migrate, the editor's account
    python wagtail_driver.py serve    # one step a line on stdin, one answer a line on stdout

Each answer is JSON after ``ANSWER``: what the step did, and the tasks this process enqueued and saw
finish since the last answer (module path, id, status). ``dump`` answers with the site's search index
(its rows and what a few searches find) and its reference index, by natural keys, so two sites that
did the same steps compare equal whatever ids their index rows got.
"""

from __future__ import annotations

import io
import json
import sys
import traceback
from typing import Any

import django

django.setup()

from bs4 import BeautifulSoup  # noqa: E402  (Wagtail's own dependency)
from django.apps import apps  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.core.files.uploadedfile import SimpleUploadedFile  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402
from django.urls import reverse  # noqa: E402
from PIL import Image as PILImage  # noqa: E402

ANSWER = "ANSWER "
EDITOR = "editor"
HOME_ID = 3  # the home page `wagtail start` makes (the tree's root is 1)
QUERIES = ["harbour", "annual", "opening", "summer", "nine", "eight"]
seen: dict[str, list] = {"enqueued": [], "finished": []}


def setup() -> None:
    call_command("makemigrations", "home", verbosity=0)
    call_command("migrate", verbosity=0)
    get_user_model().objects.create_superuser(EDITOR, "editor@example.com", "not-a-secret")


def listen() -> None:
    """Record the tasks this process enqueues and sees finish, from whichever Tasks module sends them."""
    for module in ("django_tasks.signals", "django.tasks.signals"):
        try:
            signals = __import__(module, fromlist=["task_enqueued"])
        except ImportError:
            continue
        signals.task_enqueued.connect(_enqueued, weak=False)
        signals.task_finished.connect(_finished, weak=False)


def _enqueued(sender: Any, task_result: Any, **kwargs: Any) -> None:
    seen["enqueued"].append([task_result.task.module_path, str(task_result.id)])


def _finished(sender: Any, task_result: Any, **kwargs: Any) -> None:
    seen["finished"].append([task_result.task.module_path, str(task_result.status)])


def form_data(client: Client, url: str) -> dict[str, Any]:
    """The POST form of an admin page, with the values it shows (as a browser would send them)."""
    page = client.get(url)
    assert page.status_code == 200, f"GET {url}: {page.status_code}"
    form = BeautifulSoup(page.content, "html.parser").find("form", attrs={"method": lambda m: m and m.lower() == "post",
                                                                            "action": url})
    assert form is not None, f"no form posting to {url}"
    data: dict[str, Any] = {}
    for field in form.find_all(["input", "textarea", "select"]):
        name, kind = field.get("name"), field.get("type")
        if not name or kind in ("file", "submit", "button") or (kind == "checkbox" and not field.has_attr("checked")):
            continue
        if field.name == "select":
            chosen = field.find("option", selected=True) or field.find("option")
            data[name] = chosen.get("value", "") if chosen else ""
        else:
            data[name] = field.text if field.name == "textarea" else field.get("value", "")
    return data


def post(client: Client, url: str, changes: dict[str, Any]) -> None:
    """Submit the admin form at url with changes; a success redirects, anything else fails the step."""
    response = client.post(url, {**form_data(client, url), **changes})
    if response.status_code != 302:
        soup = BeautifulSoup(response.content, "html.parser")
        errors = [e.get_text(" ", strip=True) for e in soup.select(".error-message, .help-critical, .w-field__errors")]
        raise AssertionError(f"POST {url}: {response.status_code} {errors}")


def png() -> SimpleUploadedFile:
    out = io.BytesIO()
    PILImage.new("RGB", (64, 48), (40, 90, 160)).save(out, "PNG")
    return SimpleUploadedFile("harbour.png", out.getvalue(), content_type="image/png")


def upload(client: Client) -> dict[str, Any]:
    post(client, reverse("wagtailimages:add"), {"title": "Harbour at dawn", "file": png()})
    report = SimpleUploadedFile("report.txt", b"Annual report of the harbour office", content_type="text/plain")
    post(client, reverse("wagtaildocs:add"), {"title": "Annual report", "file": report})
    return {"image": model("wagtailimages", "Image").objects.get().pk,
            "document": model("wagtaildocs", "Document").objects.get().pk}


def publish(client: Client) -> dict[str, Any]:
    image, document = model("wagtailimages", "Image").objects.get(), model("wagtaildocs", "Document").objects.get()
    post(client, reverse("wagtailadmin_pages:add", args=("home", "homepage", HOME_ID)), {
        "title": "Opening hours", "slug": "opening-hours", "body": "Open daily from nine",
        "hero": image.pk, "report": document.pk, "action-publish": "action-publish",
    })
    return {"page": page().pk}


def republish(client: Client) -> dict[str, Any]:
    post(client, reverse("wagtailadmin_pages:edit", args=(page().pk,)), {
        "title": "Opening hours in summer", "body": "Open daily from eight until late",
        "action-publish": "action-publish",
    })
    return {"page": page().pk}


def delete(client: Client) -> dict[str, Any]:
    gone = page().pk
    post(client, reverse("wagtailadmin_pages:delete", args=(gone,)), {})
    post(client, reverse("wagtailimages:delete", args=(model("wagtailimages", "Image").objects.get().pk,)), {})
    post(client, reverse("wagtaildocs:delete", args=(model("wagtaildocs", "Document").objects.get().pk,)), {})
    return {"deleted": gone}


def page() -> Any:
    return model("home", "HomePage").objects.exclude(pk=HOME_ID).get()


def model(app_label: str, name: str) -> Any:
    return apps.get_model(app_label, name)


def dump(client: Client) -> dict[str, Any]:
    """The search index and the reference index, by natural keys, in a stable order."""
    from wagtail.models import Page, ReferenceIndex

    search = sorted(_row(e, skip=("id",)) for e in model("wagtailsearch", "IndexEntry").objects.all())
    hits = {q: sorted(p.pk for p in Page.objects.live().search(q)) for q in QUERIES}
    references = sorted(_row(r, skip=("id",)) for r in ReferenceIndex.objects.all())
    return {"search": search, "hits": hits, "references": references}


def _row(obj: Any, skip: tuple[str, ...]) -> list[Any]:
    """A model row as [field, value] pairs; a content type by its natural key."""
    out = []
    for field in obj._meta.concrete_fields:
        if field.name in skip:
            continue
        value = getattr(obj, field.name)
        if field.is_relation:
            value = ".".join(value.natural_key()) if hasattr(value, "natural_key") else getattr(value, "pk", None)
        out.append([field.name, value if isinstance(value, int | float | str | type(None)) else str(value)])
    return out


STEPS = {"upload": upload, "publish": publish, "republish": republish, "delete": delete, "dump": dump}


def serve() -> None:
    listen()
    client = Client()
    client.force_login(get_user_model().objects.get(username=EDITOR))
    for line in sys.stdin:
        step = line.strip()
        try:
            answer = {"step": step, "did": STEPS[step](client)}
        except Exception:
            answer = {"step": step, "error": traceback.format_exc()}
        answer.update({k: list(v) for k, v in seen.items()})
        for v in seen.values():
            v.clear()
        print(ANSWER + json.dumps(answer, default=str), flush=True)


if __name__ == "__main__":
    setup() if sys.argv[1:] == ["setup"] else serve()
