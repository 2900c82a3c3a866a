"""The controller's decisions (pure: no clock, no cluster), all made from one
:class:`~dihera.controller.decide.view.JobView`:

- ``view``: what one pass observed of a job (with Kueue's answer and the conflicts found under its names)
- ``records``: the records the policies share: the facts, the hold's plan, the drops' plan
- ``decision``: what decisions answer (a phase with its message and cause; an Event)
- ``phase``: the ordered table of phase policies, and the facts they read, worked out of the view once per
  pass (replica states, drops, restarts, deadline)
- ``status``: the new status, its Events and the drops to apply (``conditions``, ``progress``, ``outputs``:
  its parts)
- ``converge``: what to create, release or sync before the status
- ``autoscaling``: collector autoscaling's decision in the status (its condition, its Events)
- ``figures``: the RL figures shown in the Argo UI (the Workflow's description, written at most every 15 s)
- ``outside``: what was done to the job's objects from outside dihera (the Argo UI's actions on its Workflow,
  its Service or membership ConfigMap deleted or edited), undone or repaired
- ``ownership``: whether an object under one of the job's names is the job's; a conflict when it is not
  (never adopted or written: the job Pending, ObjectConflict)
- ``replicas``: each replica's current attempt from the Workflow's nodes and the pods (``stuck``: why a pod
  does not run)

One module per lifecycle concern, each with its phase policies:

- ``hold``: spec.suspend and Kueue's admission (Suspended, Queued; stop, wait, resume)
- ``failures``: backoffLimit, failurePolicy DropReplica, restarts
- ``success``: successPolicy
- ``training``: spec.trainingPolicy (the RL figures end the job: a target, a plateau, NaN)
- ``deadline``: activeDeadlineSeconds and ttlSecondsAfterFinished
- ``cleanup``: cleanPodPolicy once the job ended

The modules sit on floors (``.importlinter``'s decide-floors contract, docs/architecture.md): each imports
only from the floors below it, so no import, not even a type's, runs back up.
"""
