"""TEST DOUBLES of the cloud services the collection's credential code talks to, for this repository's tests only.

``token_endpoint``: a local HTTPS OAuth token endpoint (the ``token_server`` fixture); ``fake_clouds``: Google's
token URI, AWS STS and Nebius IAM on one local HTTPS server (the ``fake_clouds`` fixture), verifying what they are
sent. The collection never uses them, and the built collection leaves them out (``testing/`` is in galaxy.yml's
``build_ignore``).
"""
