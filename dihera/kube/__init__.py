"""The only package that talks to Kubernetes. Everything else computes.

- ``config``: the API client (a kubeconfig or in-cluster); ``requests``: naming a request by verb and kind;
  ``responses``: raw responses decoded and their connections given back; ``errors``: short error texts
- ``watch``: the watch layer the controller and the di-server read from (informers, the store)
- ``lease``: leader election on a ``coordination.k8s.io`` Lease
- ``jobs``: DIJobs (get, create, status write, wait); ``objects``: what a DIJob owns (ConfigMap, Service,
  Workflow, pods); ``events``: Events about a DIJob; ``apply``: a job's companion objects (server-side apply)
- ``scale_executor``: scaling's API calls (``ScaleStore``) and ``JobScaler``, the use case of
  :mod:`dihera.scaling.executor` wired to them
- ``workloads``: Kueue's Workloads, ResourceFlavors and priority classes; ``queues``: Kueue's LocalQueues and
  ClusterQueues, and the annotation of a shrunk job
- ``auth``: TokenReview and SubjectAccessReview; ``key_annotations``: Idempotency-Keys kept on the DIJob;
  ``profilings``: a job's ``status.profilings``;
  ``training``: a job's ``status.training`` (the di-server's write)
- ``snapshot``: a job as one read saw it (plain data)
- ``experiments``: a sweep's Workflow and its trials' DIJobs (``dihera experiment``)
"""

from __future__ import annotations

from dihera.kube.config import api_client

__all__ = ["api_client"]
