"""The API's names in one place (like JobSet's ``pkg/constants``): phases, reasons, keys, field managers.

Phases are a ``str`` enum, so ``Phase.RUNNING == "Running"`` and a status serialises unchanged.
Nothing here computes; every module that writes or reads one of these names imports it from here.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "ANNOTATION_ARTIFACT_COLLECTOR",
    "ANNOTATION_FINISH_GRACE",
    "ANNOTATION_GENERATION",
    "ANNOTATION_IDEMPOTENCY",
    "ANNOTATION_NODE_NAME",
    "ANNOTATION_PEER_WAIT_TIMEOUT",
    "ANNOTATION_RANK",
    "ANNOTATION_REPLICAS",
    "ANNOTATION_TASK_RANK",
    "ANNOTATION_TASK_REPLICAS",
    "ANNOTATION_TRAINING_SUMMARY",
    "ANNOTATION_WORKFLOW_DESCRIPTION",
    "ANNOTATION_WORKFLOW_TITLE",
    "ANNOTATION_WORKLOAD_SLICE",
    "ARCHIVED_LOG_ARTIFACT",
    "ARGO_MAIN_CONTAINER",
    "CHECKPOINT_DIR_ENV",
    "CHECKPOINT_VOLUME",
    "CONDITION_AUTOSCALING",
    "DEFAULT_FINISH_GRACE",
    "DEFAULT_IMAGE",
    "DEFAULT_PEER_WAIT_TIMEOUT",
    "ENV_STRING_MARGIN",
    "EVENT_NORMAL",
    "EVENT_WARNING",
    "FIELD_MANAGER_CONTROLLER",
    "FIELD_MANAGER_SERVER",
    "FIGURES_SHOWN_EVERY",
    "HEADER_IDEMPOTENCY_KEY",
    "KUEUE_API_VERSION",
    "KUEUE_GROUP",
    "KUEUE_VERSION",
    "LABEL_EXPERIMENT",
    "LABEL_GOAL",
    "LABEL_JOB",
    "LABEL_MANAGED_BY",
    "LABEL_METRIC",
    "LABEL_POD",
    "LABEL_QUEUE_NAME",
    "LABEL_TASK_NAME",
    "LABEL_TASK_TYPE",
    "LABEL_TRIALS",
    "LABEL_TRIAL_POD",
    "MANAGED_BY",
    "MAX_ENV_STRING",
    "PEER_WAIT_CONTAINER",
    "PROFILINGS_CHECKPOINT",
    "STUCK_WAITING_REASONS",
    "TERMINAL_PHASES",
    "TF_ENTRY_EXTRA",
    "TF_ROLE_EXTRA",
    "VACANT_RANK_ADDRESS",
    "WARNING_CAUSES",
    "WARNING_PHASES",
    "WORKFLOW_ENTRYPOINT",
    "AutoscaleReason",
    "EventReason",
    "Phase",
    "StuckReason",
    "condition_reason",
]


class Phase(StrEnum):
    """``status.phase`` of a DIJob (and the ``type`` of its conditions)."""

    PENDING = "Pending"
    STARTING = "Starting"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    RESCHEDULING = "Rescheduling"
    SUSPENDED = "Suspended"
    #: Waiting for Kueue to admit the job's Workload (or evicted by Kueue): no replica runs.
    QUEUED = "Queued"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


#: A job in one of these phases is finished; its status is final.
TERMINAL_PHASES = frozenset({Phase.SUCCEEDED, Phase.FAILED})
#: Entering one of these phases posts a Warning Event (others a Normal one).
WARNING_PHASES = frozenset({Phase.FAILED, Phase.RESTARTING})


class EventReason(StrEnum):
    """``reason`` of the Events about a DIJob (phase changes use ``Job<Phase>``, see :func:`condition_reason`)."""

    SCALE_REFUSED = "ScaleRefused"
    REPLICAS_CHANGED = "ReplicasChanged"
    REPLICA_RESTARTED = "ReplicaRestarted"
    INVALID_JOB = "InvalidJob"
    WORKFLOW_DELETED = "WorkflowDeleted"
    WORKFLOW_FAILED = "WorkflowFailed"
    BACKOFF_LIMIT_EXCEEDED = "BackoffLimitExceeded"
    DEADLINE_EXCEEDED = "DeadlineExceeded"
    REPLICA_STUCK = "ReplicaStuck"
    #: A replica of a ``failurePolicy: DropReplica`` task exhausted its retries and left the membership.
    REPLICA_DROPPED = "ReplicaDropped"
    #: Dropping such a replica would take its task below 1 replica or the job below ``minReplicas``.
    DROP_BOUND_REACHED = "DropBoundReached"
    #: Kueue evicted the job's Workload (preempted, deactivated...): its replicas are stopped and it is queued again.
    EVICTED = "Evicted"
    #: A Workflow labelled with the job that is not its own (an Argo RESUBMIT's copy) was deleted.
    WORKFLOW_COPY_DELETED = "WorkflowCopyDeleted"
    #: The job's Workflow was suspended in Argo: the DIJob is suspended instead.
    SUSPENDED_IN_ARGO = "SuspendedInArgo"
    #: The job's Workflow was stopped (Argo's STOP) or terminated (TERMINATE) from outside dihera.
    WORKFLOW_STOPPED = "WorkflowStopped"
    WORKFLOW_TERMINATED = "WorkflowTerminated"
    #: The job's headless Service was deleted or edited: created again or put back.
    SERVICE_REPAIRED = "ServiceRepaired"
    #: The job's membership ConfigMap was deleted or edited: created again or put back.
    MEMBERSHIP_REPAIRED = "MembershipRepaired"
    #: An object under one of the job's names (its Service, membership ConfigMap or Workflow) that the DIJob
    #: does not own: left untouched, the job Pending until the name is free (a Warning; the condition's reason).
    OBJECT_CONFLICT = "ObjectConflict"
    #: Collectors given back so a higher-priority Workload waiting in the job's ClusterQueue fits without an
    #: eviction (docs/queueing.md, "Shrink before eviction"); on the shrunk job and on the one it made room for.
    COLLECTORS_SHRUNK = "CollectorsShrunk"
    #: A shrunk job took collectors back once its ClusterQueue had the quota again.
    COLLECTORS_GROWN_BACK = "CollectorsGrownBack"
    #: Giving collectors back failed (a scale refused or conflicting): Kueue's preemption applies.
    SHRINK_FAILED = "ShrinkFailed"

    #: spec.trainingPolicy ended the job (docs/autoscaling.md): a metric reached its target → Succeeded;
    TRAINING_TARGET_REACHED = "TrainingTargetReached"
    #: the best evaluation return stopped improving → Succeeded;
    TRAINING_PLATEAUED = "TrainingPlateaued"
    #: a replica reported a NaN or infinite figure (loss, return) → Failed.
    NON_FINITE_METRIC = "NonFiniteMetric"


class AutoscaleReason(StrEnum):
    """Why collector autoscaling changed the count or held it (docs/autoscaling.md): the reason of its Events and
    of the job's :data:`CONDITION_AUTOSCALING` condition."""

    COLLECTORS_ADDED = "CollectorsAdded"
    COLLECTORS_REMOVED = "CollectorsRemoved"
    #: the figures are within the targets (or their recommendations disagree over the windows)
    WITHIN_TARGET = "WithinTarget"
    #: a change is recommended but its stabilization window is not yet covered by figures at the current count
    STABILIZING = "Stabilizing"
    #: a change is recommended but a bound or a disabled direction forbids it, or one collector over-produces
    SCALE_LIMITED = "ScaleLimited"
    #: no figures in status.training at the current count yet
    NO_FIGURES = "NoFigures"
    #: the newest figures are older than autoscaling.staleAfterSeconds
    STALE_FIGURES = "StaleFigures"
    #: the scale path refused the change (Kueue quota, a limit of the job)
    SCALE_REFUSED = "AutoscaleRefused"


#: Seconds between two writes of a job's RL figures to its Workflow's annotations (the Argo UI's description,
#: dihera.controller.decide.figures): each write wakes Argo's controller, so they come at most this often.
FIGURES_SHOWN_EVERY = 15.0

#: The condition collector autoscaling keeps (True while it acts on fresh figures), beside the phase's.
CONDITION_AUTOSCALING = "CollectorsAutoscaled"

#: A phase decided for one of these causes posts a Warning Event, and posts it again when its message
#: changes while the phase stays (a job Pending since its first pass, then held by a conflict).
WARNING_CAUSES = frozenset({EventReason.OBJECT_CONFLICT})


class StuckReason(StrEnum):
    """Why a replica is stuck (``status.stuckReplicas[].reason``): the scheduler's or the kubelet's word."""

    UNSCHEDULABLE = "Unschedulable"
    ERR_IMAGE_PULL = "ErrImagePull"
    IMAGE_PULL_BACK_OFF = "ImagePullBackOff"
    INVALID_IMAGE_NAME = "InvalidImageName"
    CREATE_CONTAINER_CONFIG_ERROR = "CreateContainerConfigError"
    CREATE_CONTAINER_ERROR = "CreateContainerError"
    RUN_CONTAINER_ERROR = "RunContainerError"
    CRASH_LOOP_BACK_OFF = "CrashLoopBackOff"
    OOM_KILLED = "OOMKilled"


#: A container waiting with one of these reasons will not start by itself.
STUCK_WAITING_REASONS = frozenset(
    {
        StuckReason.ERR_IMAGE_PULL,
        StuckReason.IMAGE_PULL_BACK_OFF,
        StuckReason.INVALID_IMAGE_NAME,
        StuckReason.CREATE_CONTAINER_CONFIG_ERROR,
        StuckReason.CREATE_CONTAINER_ERROR,
        StuckReason.RUN_CONTAINER_ERROR,
        StuckReason.CRASH_LOOP_BACK_OFF,
    }
)


def condition_reason(phase: str) -> str:
    """A condition's (and a phase change Event's) reason: ``Running`` → ``JobRunning`` (DI-orchestrator's)."""
    return f"Job{phase}"


EVENT_NORMAL = "Normal"
EVENT_WARNING = "Warning"


# -- labels and annotations on what a DIJob creates -------------------------------------------------
LABEL_JOB = "diengine/job"
LABEL_TASK_TYPE = "diengine/task-type"
LABEL_TASK_NAME = "diengine/task-name"
LABEL_POD = "diengine/pod"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY = {LABEL_MANAGED_BY: "dihera"}
ANNOTATION_RANK = "diengine/rank"
ANNOTATION_TASK_RANK = "diengine/task-rank"
ANNOTATION_REPLICAS = "diengine/replicas"
#: On a replica's pod: the name of the container dihera added to collect its artifacts (dihera/render/outputs.py),
#: which the controller skips like Argo's own when it judges the user's containers.
ANNOTATION_ARTIFACT_COLLECTOR = "diengine/artifact-collector"
#: On the Workflow: the membership generation its DAG was last converged to. On the DIJob: the
#: membership generation its ``spec.tasks[].replicas`` were last written or synced at (its stamp).
ANNOTATION_GENERATION = "diengine/membership-generation"
#: On the DIJob: the di-server's recent ``Idempotency-Key`` answers (JSON), shared by its replicas.
ANNOTATION_IDEMPOTENCY = "diengine/idempotency-keys"
#: The request header naming a write's key (the di-server answers a key once; `dihera scale --server` sends one).
HEADER_IDEMPOTENCY_KEY = "Idempotency-Key"
#: On the Workflow: its live replicas per task, ``learner 1, collector 2`` (an Argo UI column, dihera.argo_ui).
ANNOTATION_TASK_REPLICAS = "diengine/task-replicas"
#: Argo UI's title and description of a Workflow.
ANNOTATION_WORKFLOW_TITLE = "workflows.argoproj.io/title"
ANNOTATION_WORKFLOW_DESCRIPTION = "workflows.argoproj.io/description"
#: On the Workflow: the sentence of the job's RL figures its description shows (dihera.argo_ui.training_summary),
#: kept apart so that a rewrite of the description for a new membership keeps it.
ANNOTATION_TRAINING_SUMMARY = "diengine/training-summary"
#: The Workflow's DAG template (and entrypoint) that holds one task per replica.
WORKFLOW_ENTRYPOINT = "dijob"
#: Argo's annotation on a pod: the Workflow node it runs (``<workflow>.<dag task>(<attempt>)``).
ANNOTATION_NODE_NAME = "workflows.argoproj.io/node-name"
#: On a sweep trial's DIJob: the pod of the Workflow node that created it (Argo's ``{{pod.name}}``), which
#: the Argo UI's pod link names: the di-server finds the trial's DIJob by it (dihera.argo_ui).
LABEL_TRIAL_POD = "diengine/trial-pod"
#: The key of ``status.profilings`` under which a job reports the last checkpoint it saved (its iteration, file,
#: replica, time, and whether SIGTERM made it: docs/checkpoints.md); a ``kubectl get dijob -o wide`` column.
PROFILINGS_CHECKPOINT = "checkpoint"
#: The right to report into a DIJob's ``status.profilings`` through the di-server: ``create`` on
#: ``dijobs/profilings`` (a subresource only RBAC and the di-server's SubjectAccessReview know: the API server
#: serves none), which the chart's ClusterRole ``<fullname>-reporter`` grants a job's pods.
PROFILINGS_SUBRESOURCE = "profilings"
#: What the TokenReview of a pod's own ServiceAccount token (bound to the pod) says in ``user.extra``: the pod's
#: name and uid. A report sent with such a token is accepted only into the DIJob that pod is a replica of.
TOKEN_EXTRA_POD_NAME = "authentication.kubernetes.io/pod-name"
TOKEN_EXTRA_POD_UID = "authentication.kubernetes.io/pod-uid"
#: On a sweep's Workflow and on its trials' DIJobs: the sweep's name (docs/experiments.md).
LABEL_EXPERIMENT = "diengine/experiment"
#: On a sweep's Workflow: the metric it ranks by, whether higher is better, and how many trials it has
#: (`dihera experiment status`, the di-server's experiment view through the Argo UI's workflow link).
LABEL_METRIC = "diengine/metric"
LABEL_GOAL = "diengine/goal"
LABEL_TRIALS = "diengine/trials"

# -- Kueue (docs/queueing.md) ---------------------------------------------------------------------------
#: On a DIJob: the Kueue LocalQueue the job is queued in (Kueue's own label); without it Kueue is not involved.
LABEL_QUEUE_NAME = "kueue.x-k8s.io/queue-name"
KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_VERSION = "v1beta2"
KUEUE_API_VERSION = f"{KUEUE_GROUP}/{KUEUE_VERSION}"
#: On a scale-up's slice Workload: the membership generation the added replicas were asked at.
ANNOTATION_WORKLOAD_SLICE = "diengine/workload-slice"
#: On a DIJob whose collectors were given back to a higher-priority Workload: JSON ``{task: replicas}``, the
#: counts it grows back to once its ClusterQueue has the quota (docs/queueing.md, "Shrink before eviction").
ANNOTATION_SHRUNK_FROM = "diengine/shrunk-from"

# -- who writes (managedFields, Event source) -------------------------------------------------------
FIELD_MANAGER_CONTROLLER = "dihera-controller"
FIELD_MANAGER_SERVER = "dihera-server"

#: The ``DI_NODES`` entry of a rank no replica holds (a replica removed from the middle). DI-engine
#: 0.5.3 dials every lower rank's entry: an empty entry (``tcp://:PORT``) or a name that does not
#: resolve raises in its listener thread and leaves the process silently deaf, while an address
#: that refuses connections is redialled quietly. Nothing in a pod listens on its own loopback at
#: the mesh port (ding listens on the pod's FQDN), so 127.0.0.1 refuses (measured:
#: bench/probe_vacant_rank_dial.py).
VACANT_RANK_ADDRESS = "127.0.0.1"

# -- one environment string: what Linux will exec (docs/rendering.md, "Names in the node lists") ----
#: Linux refuses to exec a process (E2BIG) one of whose argument or environment strings, with its
#: NUL, is longer than MAX_ARG_STRLEN (32 pages): ``NAME=value`` may hold at most 131071 bytes.
MAX_ENV_STRING = 131072
#: Bytes kept free beside a membership ConfigMap value that becomes an environment string: the
#: variable's name (``DI_<TASK>_NODES``: at most 49 bytes), ``=`` and the NUL, and the text
#: ``TF_CONFIG`` puts around ``TF_CLUSTER``. A value fits when its bytes + this <= MAX_ENV_STRING.
ENV_STRING_MARGIN = 128
#: TensorFlow's cluster entry is ``"<hostname>:<port>"`` and a comma: the port's colon and at most 5
#: digits, and two quotes.
TF_ENTRY_EXTRA = len(":65535") + 2
#: Each TensorFlow role's ``"<role>":[...]`` around its list, at most.
TF_ROLE_EXTRA = 32

# -- peers before main: the init container every replica gets (docs/rendering.md) ------------------
#: The init container rendered first into every replica's pod: ``dihera wait-peers`` holds the
#: replica's containers until its own and every lower rank's FQDN resolve.
PEER_WAIT_CONTAINER = "dihera-wait-peers"
#: On a DIJob: how long (whole seconds) each replica waits for those names; ``"0"`` renders no wait.
ANNOTATION_PEER_WAIT_TIMEOUT = "diengine/peer-wait-timeout"
#: Seconds the other replicas of a DI-engine job (collectors, none tasks) get to end after its learners and
#: evaluators ended, before the job Succeeds and they are stopped (docs/controller.md, "When a job succeeds").
ANNOTATION_FINISH_GRACE = "diengine/finish-grace-seconds"
DEFAULT_FINISH_GRACE = 90
#: The platform's default bound of that wait (``RenderSettings.peer_wait_timeout``).
DEFAULT_PEER_WAIT_TIMEOUT = 300
#: The project's image, as the chart names it by default (``image.repository:appVersion``): what runs
#: ``dihera wait-peers`` when nobody says otherwise (``dihera render``, in-process controllers). The
#: chart gives the controller its own image instead (``DIHERA_PEER_WAIT_IMAGE``).
DEFAULT_IMAGE = "dihera:0.1.0"

#: The pod volume of the membership ConfigMap, in every replica's pod (mounted read-only in every container).
MEMBERSHIP_VOLUME = "dihera-membership"

# -- the checkpoint volume (spec.checkpoint, docs/checkpoints.md) -----------------------------------
#: The pod volume of the job's checkpoint claim, in the replicas of the tasks that mount it.
CHECKPOINT_VOLUME = "dihera-checkpoints"
#: A mounting replica's own directory in it, ``<mountPath>/<task>-<index>`` (the same across its restarts
#: and the job's resumes; the program creates it).
CHECKPOINT_DIR_ENV = "DI_CHECKPOINT_DIR"
#: Argo's name for a pod's archived log (its artifact repository's ``archiveLogs``): no ``spec.artifacts[]``
#: may take it.
ARCHIVED_LOG_ARTIFACT = "main-logs"
#: The container whose outputs Argo's executor saves (dihera/render/outputs.py).
ARGO_MAIN_CONTAINER = "main"
