"""Builders of the objects tests make: DIJobs and their tasks, pods, Workflows and Argo's status nodes, ConfigMaps.

Fluent, like JobSet's testing wrappers (``MakeJobSet(...).Replicas(3).Obj()``): a builder starts from the
smallest object the code under test reads, each call adds one field, ``obj()`` returns a fresh dict::

    PodBuilder("j-learner-0-0").replica("j", "learner", 0).phase("Running").ready().obj()
    WorkflowBuilder("j").uid("wf").dag(membership, retired={"collector-1"}).phase("Running").nodes({}).obj()
    DIJobBuilder("j").namespace("ns").uid("job-uid").task(task("learner"), task("collector", replicas=2)).obj()
    job(task("learner"), task("collector", replicas=2), name="dqn")   # the short form of a DIJob manifest

Unit and integration tests import it from here; no test module is imported by another (tests/unit/test_test_imports.py).
"""

from tests.builders.configmaps import ConfigMapBuilder, configmap
from tests.builders.dijobs import IMAGE, DIJobBuilder, TaskBuilder, container, job, task
from tests.builders.objects import ObjectBuilder
from tests.builders.pods import PodBuilder
from tests.builders.workflows import WorkflowBuilder, pod_node, retry_node

__all__ = [
    "IMAGE",
    "ConfigMapBuilder",
    "DIJobBuilder",
    "ObjectBuilder",
    "PodBuilder",
    "TaskBuilder",
    "WorkflowBuilder",
    "configmap",
    "container",
    "job",
    "pod_node",
    "retry_node",
    "task",
]
