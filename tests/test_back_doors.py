"""No back doors: a layer below ``emq.models`` never reaches the models through Django's app
registry, the arrow import-linter cannot see (``apps.get_model`` made rows.py and models.py a
cycle). The rows reach the scheduling layer, and the Pump, from the commands that start them."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import emq

EMQ = Path(emq.__file__).parent
MODEL_LOOKUPS = {"get_model", "get_models", "get_app_config", "all_models"}
# Django's adapters may ask the app registry which apps are installed (is_installed,
# get_app_configs): that reaches no model. Every other layer below the models imports no django.apps.
ASKS_WHICH_APPS = {"emq.contrib"}


def below_models() -> list[str]:
    """The packages of every layer under ``emq.models``, read from the import-linter contract."""
    config = tomllib.loads((EMQ.parent / "pyproject.toml").read_text())
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    layers = contract["layers"]
    under = layers[layers.index("emq.models") + 1:]
    return [name.strip() for layer in under for name in layer.replace("|", ":").split(":")]


def modules(package: str) -> list[tuple[str, ast.Module]]:
    path = EMQ.parent.joinpath(*package.split("."))
    files = sorted(path.rglob("*.py")) if path.is_dir() else [path.with_suffix(".py")]
    return [(str(f.relative_to(EMQ.parent)), ast.parse(f.read_text())) for f in files]


def app_registry_imports(tree: ast.Module) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "django" and any(a.name == "apps" for a in node.names):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("django.apps"):
            lines.append(node.lineno)
        elif isinstance(node, ast.Import) and any(a.name.startswith("django.apps") for a in node.names):
            lines.append(node.lineno)
    return lines


def model_lookups(tree: ast.Module) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in MODEL_LOOKUPS:
            found.append((node.lineno, node.attr))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module", "__import__"):
            named = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            found += [(node.lineno, f"import of {n}") for n in named if n.endswith("models")]
    return found


def test_the_layers_below_the_models_are_known():
    """The scan below follows the contract: a layer added under emq.models is scanned too."""
    assert below_models()[:2] == ["emq.contrib", "emq.runtime"]
    assert {"emq.scheduling", "emq.jobs", "emq.core", "emq.errors"} <= set(below_models())


def test_no_layer_below_the_models_looks_a_model_up():
    found = [f"{path}:{line} {what}" for package in below_models() for path, tree in modules(package)
             for line, what in model_lookups(tree)]
    assert not found, (
        f"a model reached from below emq.models, an import cycle the linter cannot see: {found}. "
        "Hand the rows (or their manager) in from the command or the model that calls this layer.")


def test_no_layer_below_the_models_imports_the_app_registry():
    found = [f"{path}:{line}" for package in below_models() if package not in ASKS_WHICH_APPS
             for path, tree in modules(package) for line in app_registry_imports(tree)]
    assert not found, (
        f"django.apps imported below emq.models: {found}. The app registry reaches every model; "
        "pass what the code needs in from above (e.g. django.utils.module_loading.autodiscover_modules "
        "finds every app's module).")
