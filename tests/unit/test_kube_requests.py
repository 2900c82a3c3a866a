"""Requests named by verb and kind as the audit log names them (table-driven)."""

from __future__ import annotations

import pytest

from dihera.kube.requests import request_kind, request_verb

CASES = [
    ("GET", "https://h/api/v1/namespaces/ns/pods", "list", "pods"),
    ("GET", "https://h/api/v1/namespaces/ns/pods?labelSelector=diengine%2Fjob", "list", "pods"),
    ("GET", "https://h/api/v1/pods?labelSelector=a", "list", "pods"),
    ("GET", "https://h/api/v1/namespaces/ns/configmaps/j-membership", "get", "configmaps"),
    ("GET", "https://h/api/v1/namespaces/ns/pods?watch=true&resourceVersion=5", "watch", "pods"),
    ("GET", "https://h/apis/argoproj.io/v1alpha1/namespaces/ns/workflows/j", "get", "workflows"),
    ("GET", "https://h/apis/diengine.opendilab.org/v2alpha1/dijobs", "list", "dijobs"),
    ("PATCH", "https://h/apis/diengine.opendilab.org/v2alpha1/namespaces/ns/dijobs/j/status", "patch", "dijobs/status"),
    ("POST", "https://h/api/v1/namespaces/ns/events", "create", "events"),
    ("PUT", "https://h/api/v1/namespaces/ns/configmaps/c", "update", "configmaps"),
    ("DELETE", "https://h/api/v1/namespaces/ns/pods/p", "delete", "pods"),
    ("GET", "https://h/api/v1/namespaces/ns", "get", "namespaces"),
    ("GET", "https://h/api/v1/namespaces", "list", "namespaces"),
    ("POST", "https://h/api/v1/namespaces/ns/serviceaccounts/sa/token", "create", "serviceaccounts/token"),
    ("POST", "https://h/apis/authentication.k8s.io/v1/tokenreviews", "create", "tokenreviews"),
]


@pytest.mark.parametrize(("method", "url", "verb", "kind"), CASES)
def test_request_names(method: str, url: str, verb: str, kind: str) -> None:
    assert (request_verb(method, url), request_kind(url)) == (verb, kind)
