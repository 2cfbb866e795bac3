"""The test control plane: a real Kubernetes API server, controllers and scheduler with kwok's simulated nodes,
and the operator test double. Test tooling only: the collection never imports it (see README.md)."""
