"""pytest setup for the control plane's self-tests and the operator double's: the real-cluster fixtures."""

from cluster.fixtures import cluster, fresh_cluster, run_playbook  # noqa: F401  # pylint: disable=unused-import
