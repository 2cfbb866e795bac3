"""releases.py: a release a dead run left pending is rolled back to its newest deployed revision, or uninstalled."""

from __future__ import annotations

import pytest
from ansible_collections.modelplane.serving.plugins.module_utils.servingstack import releases


@pytest.mark.parametrize(("history", "action", "revision"), [
    ([], None, None),
    ([(1, "deployed")], None, None),
    ([(1, "superseded"), (2, "deployed")], None, None),
    ([(1, "failed")], None, None),
    ([(1, "pending-install")], "uninstall", None),
    # An install that failed, then a second try killed: it never deployed.
    ([(1, "failed"), (2, "pending-upgrade")], "uninstall", None),
    ([(1, "deployed"), (2, "pending-upgrade")], "rollback", 1),
    ([(1, "superseded"), (2, "deployed"), (3, "failed"), (4, "pending-upgrade")], "rollback", 2),
    ([(1, "superseded"), (2, "superseded"), (3, "pending-rollback")], "rollback", 2),
    # Order does not matter: the newest revision is the highest number.
    ([(2, "pending-upgrade"), (1, "deployed")], "rollback", 1),
    ([(10, "pending-upgrade"), (9, "deployed"), (2, "superseded")], "rollback", 9),
])
def test_the_recovery_follows_the_newest_revision(history, action, revision):
    found = releases.recovery("mp-lws", "lws-system", history)
    assert (found.action if found else None, found.revision if found else None) == (action, revision)


def test_the_message_names_the_release_its_state_and_what_was_done():
    rolled = releases.recovery("mp-lws", "lws-system", [(1, "deployed"), (2, "pending-upgrade")])
    assert rolled.message == ("Helm release lws-system/mp-lws was left pending-upgrade at revision 2 by a run that "
                              "did not finish: rolled back to revision 1, its newest deployed one")
    removed = releases.recovery("mp-lws", "lws-system", [(1, "pending-install")])
    assert removed.message.endswith("left pending-install at revision 1 by a run that did not finish and never "
                                    "deployed: uninstalled")


def secret(name, namespace, revision, status):
    return {"metadata": {"name": f"sh.helm.release.v1.{name}.v{revision}", "namespace": namespace,
                         "labels": {"name": name, "owner": "helm", "status": status, "version": str(revision)}}}


def test_recoveries_read_the_release_secrets_of_the_given_releases_only_and_in_their_namespace():
    secrets = [secret("mp-a", "ns", 1, "deployed"), secret("mp-a", "ns", 2, "pending-upgrade"),
               secret("mp-b", "ns", 1, "pending-install"),
               # The same name in another namespace is another release.
               secret("mp-c", "other", 1, "pending-install"), secret("mp-c", "ns", 1, "deployed"),
               # Not helm's: no version label.
               {"metadata": {"namespace": "ns", "labels": {"name": "mp-d", "status": "pending-install"}}}]
    wanted = [{"release": name, "namespace": "ns"} for name in ("mp-b", "mp-a", "mp-c", "mp-d")]
    found = [(item.release, item.action, item.revision) for item in releases.recoveries(wanted, secrets)]
    assert found == [("mp-b", "uninstall", None), ("mp-a", "rollback", 1)]
