# Copyright 2026 The modelplane.serving authors
# Apache License 2.0 (see LICENSE)
"""The connection options the plugins take from kubernetes.core (its module_utils AUTH_ARG_SPEC), documented here.

Documented in this collection rather than by extending kubernetes.core.k8s_auth_options: Galaxy renders a
collection's documentation without installing its dependencies, and a fragment of another collection does not
resolve there. tests/lint/test_packaging.py checks these options stay those of AUTH_ARG_SPEC.
"""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - The kubeconfig to connect with, C(K8S_AUTH_KUBECONFIG) when not set.
      - A path, several paths joined by C(:) (C(;) on Windows), or the kubeconfig itself as a mapping.
      - Without it and without any other connection option, the Kubernetes client's default applies
        (C(~/.kube/config), or the service account inside a pod).
    type: raw
  context:
    description:
      - The kubeconfig context to use, C(K8S_AUTH_CONTEXT) when not set; empty means the current context.
    type: str
  host:
    description:
      - URL of the Kubernetes API server, C(K8S_AUTH_HOST) when not set.
    type: str
  api_key:
    description:
      - Bearer token for the API server, C(K8S_AUTH_API_KEY) when not set.
    type: str
  username:
    description:
      - User name for HTTP basic authentication, C(K8S_AUTH_USERNAME) when not set.
      - Only for API servers that accept basic authentication.
    type: str
  password:
    description:
      - Password for HTTP basic authentication, C(K8S_AUTH_PASSWORD) when not set; see O(username).
    type: str
  validate_certs:
    description:
      - Whether the API server's TLS certificate is verified, C(K8S_AUTH_VERIFY_SSL) when not set.
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description:
      - Path of the CA certificate(s) that verify the API server, C(K8S_AUTH_SSL_CA_CERT) when not set. With
        O(validate_certs), the server's full certificate chain must be here or in the kubeconfig.
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - Path of the client certificate to authenticate with, C(K8S_AUTH_CERT_FILE) when not set.
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Path of the client certificate's key, C(K8S_AUTH_KEY_FILE) when not set.
    type: path
    aliases: [key_file]
  proxy:
    description:
      - URL of an HTTP proxy to reach the API server through, C(K8S_AUTH_PROXY) when not set.
      - C(HTTP_PROXY) and the like are not read.
    type: str
  no_proxy:
    description:
      - Comma-separated hosts, domains, addresses and CIDRs reached without O(proxy), C(K8S_AUTH_NO_PROXY) when not
        set. C(NO_PROXY) is not read.
    type: str
  proxy_headers:
    description:
      - Headers sent to O(proxy).
    type: dict
    suboptions:
      proxy_basic_auth:
        description:
          - C(user:password) for the proxy's basic authentication, C(K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH) when
            not set.
        type: str
      basic_auth:
        description:
          - C(user:password) for a basic authentication header, C(K8S_AUTH_PROXY_HEADERS_BASIC_AUTH) when not set.
        type: str
      user_agent:
        description:
          - The C(User-Agent) header, C(K8S_AUTH_PROXY_HEADERS_USER_AGENT) when not set.
        type: str
  persist_config:
    description:
      - Whether refreshed tokens (OIDC and other auth providers) are written back to the kubeconfig file,
        C(K8S_AUTH_PERSIST_CONFIG) when not set. Off by default.
    type: bool
  impersonate_user:
    description:
      - User to impersonate, C(K8S_AUTH_IMPERSONATE_USER) when not set.
    type: str
  impersonate_groups:
    description:
      - Groups to impersonate, C(K8S_AUTH_IMPERSONATE_GROUPS) (comma-separated) when not set.
    type: list
    elements: str
"""
