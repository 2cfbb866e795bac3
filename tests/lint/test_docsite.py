"""The collection's docsite: the guides in docs/docsite (extra-docs.yml, rst/, links.yml) lint clean, and the whole
site (the guides with every plugin's and role's documentation) renders with antsibull-docs and Sphinx without a
single warning.

The site is made as antsibull-docs documents it for a collection: `antsibull-docs sphinx-init --use-current`
writes conf.py and build.sh, and build.sh runs `antsibull-docs collection` and `sphinx-build -W --keep-going`
(nitpicky: every reference must resolve). One change for a machine that reaches only PyPI: conf.py's intersphinx
inventories of docs.python.org, jinja and docs.ansible.com cannot be fetched, so the site is built without them and
the few references antsibull-docs itself writes into the Ansible docsite (ANSIBLE_DOCSITE_TARGETS) are left
unresolved by name; any other unresolved reference, in a guide or a plugin's documentation, is a warning and fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
DOCSITE = REPO / "docs" / "docsite"
COLLECTION = "modelplane.serving"

# Targets in the Ansible docsite that antsibull-docs links from the pages it generates (return values, action plugins,
# configuration, the cache plugin's variables, ansible.builtin's modules). They resolve through the docs.ansible.com
# intersphinx inventory, which this machine cannot fetch.
ANSIBLE_DOCSITE_TARGETS = [
    ("ref", "common_return_values"),
    ("ref", "action_plugins"),
    ("ref", "ansible_configuration_settings"),
    ("ref", "ansible_collections.ansible.builtin.file_module"),
    ("envvar", "ANSIBLE_CACHE_PLUGIN"),
    ("envvar", "ANSIBLE_CACHE_PLUGIN_CONNECTION"),
    ("envvar", "ANSIBLE_CACHE_PLUGIN_PREFIX"),
    ("envvar", "ANSIBLE_CACHE_PLUGIN_TIMEOUT"),
]

OFFLINE_CONF = f"""
# tests/lint/test_docsite.py: no intersphinx inventory can be fetched here; see ANSIBLE_DOCSITE_TARGETS there.
intersphinx_mapping = {{}}
nitpick_ignore = {ANSIBLE_DOCSITE_TARGETS!r}
"""


def _env() -> dict[str, str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1"}
    # .collections holds this checkout as modelplane.serving (make venv links it there).
    env["ANSIBLE_COLLECTIONS_PATH"] = str(REPO / ".collections")
    env.pop("ANSIBLE_CONFIG", None)
    return env


def _run(argv: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout, check=False)


def _tool(name: str) -> str:
    path = BIN / name
    assert path.exists(), f"{name} is not installed in {BIN}: `make venv` installs it (tests/requirements.txt)"
    return str(path)


def guides() -> list[str]:
    """Every guide extra-docs.yml lists, in order (docs/docsite/rst/<name>.rst)."""
    index = yaml.safe_load((DOCSITE / "extra-docs.yml").read_text())
    return [entry if isinstance(entry, str) else entry["ref"]
            for section in index["sections"] for entry in section["toctree"]]


def test_every_guide_is_listed_once_and_every_listed_guide_exists():
    listed = guides()
    assert len(listed) == len(set(listed)), listed
    on_disk = sorted(path.stem for path in (DOCSITE / "rst").glob("*.rst"))
    assert sorted(listed) == on_disk, "docs/docsite/extra-docs.yml must list every guide in docs/docsite/rst"


def test_the_readme_links_every_guide():
    readme = (REPO / "README.md").read_text()
    missing = [name for name in guides() if f"(docs/docsite/rst/{name}.rst" not in readme]
    assert not missing, f"README.md's 'Read more' does not link: {missing}"


def test_the_guides_and_links_lint_clean():
    # Without --plugin-docs: extra-docs.yml, the guides (labels, rstcheck, references to the collection's plugins and
    # options) and links.yml. The plugins' own documentation is linted on the built tarball (test_packaging.py).
    result = _run([_tool("antsibull-docs"), "lint-collection-docs", "."], REPO)
    output = (result.stdout + result.stderr).strip()
    assert result.returncode == 0 and not output, output


@pytest.mark.slow
def test_the_docsite_renders_without_a_warning(tmp_path: Path, record_verdict):
    site = tmp_path / "site"
    site.mkdir(mode=0o700)  # antsibull-docs writes only into a folder that no one else can write to
    init = _run([_tool("antsibull-docs"), "sphinx-init", "--use-current", "--squash-hierarchy", "--fail-on-error",
                 "--sphinx-theme", "alabaster", "--dest-dir", str(site), COLLECTION], tmp_path)
    assert init.returncode == 0, init.stdout + init.stderr
    build_sh = (site / "build.sh").read_text()
    # What makes a warning fail the build: sphinx-init's strict (not --lenient) settings.
    assert "-W --keep-going" in build_sh and "nitpicky = True" in (site / "conf.py").read_text()
    with (site / "conf.py").open("a") as conf:
        conf.write(OFFLINE_CONF)
    build = _run(["bash", str(site / "build.sh")], site, timeout=900)
    output = build.stdout + build.stderr
    warnings = [line for line in output.splitlines() if "WARNING" in line or "ERROR" in line]
    assert build.returncode == 0 and not warnings, "\n".join(warnings) or output
    html = site / "build" / "html"
    index = (html / "index.html").read_text()
    for name in guides():
        assert (html / "docsite" / f"{name}.html").is_file(), name
        assert f'href="docsite/{name}.html"' in index, f"the docsite's index does not link the guide {name}"
    record_verdict("docsite (antsibull-docs + sphinx -W, nitpicky)",
                   f"{len(list(html.rglob('*.html')))} pages, {len(guides())} guides, 0 warnings")
