"""Distributed DQN on CartPole for a DIJob, started with `ditask --platform k8s`.

    ditask --platform k8s --topology mesh --labels <learner|evaluator|collector> \
        --package <dir holding this package> --main cartpole_dqn.main.main --ports <port>

One process per replica: learner, evaluator and any number of collectors, joined in DI-engine's mesh
(rank r dials ranks 0..r-1 on the same port). The role comes from `--labels`, else from the node id
(0 learner, 1 evaluator, others collectors). Training stops when the evaluator's mean return reaches
the stop value (195, CartPole-v0's "solved"); every process then exits 0.

Start without a barrier (`gate`, `link`): NNG drops a message for an event its receiver has not
subscribed to yet. The learner, once subscribed, sends a beacon every second (its incarnation and
train_iter) and, once at its start, what its exchangers send after an iteration (context and model),
which releases peers waiting in DI-engine's 60-s waits for a restarted learner. A collector holds each
batch until it has heard a beacon at most DIHERA_LEARNER_FRESH seconds old. No peer counting: any
replica count, replicas that join later, and restarts of any replica work the same way. A restarted
learner starts training from scratch (DI-engine resumes nothing) unless the replica has a checkpoint
directory (`DI_CHECKPOINT_DIR`, the DIJob's `spec.checkpoint`): then it resumes from the newest checkpoint
there (`checkpoint`: weights, optimizer, train_iter, env_step, the target network's update count),
saves one every DIHERA_CHECKPOINT_EVERY (100) iterations, and one on SIGTERM (suspend, preemption,
eviction) as of its last completed step, then exits 143.

Log-line contract (stable; one line each on stdout, `key=value` fields separated by one space, parsed
by the platform and the tests; other DI-engine output is interleaved and must be ignored):

    dihera-role role=<role> node=<node id> world=<replicas>
        once, at start.
    dihera-learner-up role=learner node=<node id> incarnation=<hostname-pid-start ms>
        on the learner, once, when its subscriptions exist and its beacon starts.
    dihera-learner-seen role=collector node=<node id> incarnation=<learner's> waited=<seconds>
        on a collector, when its gate first lets a batch go on a fresh beacon, and again whenever the
        beacon comes from another learner process (a restarted learner); waited: how long that batch
        was held.
    dihera-learner-wait-timeout role=collector node=<node id> waited=<seconds>
        on a collector, each time its gate held a batch DIHERA_LEARNER_WAIT seconds without a fresh
        beacon; the batch is sent anyway.
    dihera-progress role=learner iter=<learner iterations> env_step=<env steps received>
        on the learner, at its first iteration and every PROGRESS_EVERY (20) iterations.
    dihera-collect role=collector node=<node id> model_iter=<learner iteration> env_step=<steps>
        on a collector: at its first iteration (model_iter=0, its own initial model), at the first
        model received from the learner over the mesh, then whenever the model it collects with is
        PROGRESS_EVERY (20) or more learner iterations newer than the last one logged. model_iter is
        the learner iteration of the model in use.
    dihera-eval return=<mean return> iter=<learner iteration>
        on the evaluator, after each evaluation.
    dihera-stop-value-reached return=<mean return> iter=<learner iteration>
        on the evaluator, once, when the return reached the stop value; the job then ends.
    dihera-resumed iter=<learner iteration> env_step=<env steps> file=<iteration_<n>.pth.tar>
        on the learner, once at start, when it resumed from a checkpoint in DI_CHECKPOINT_DIR.
    dihera-checkpoint iter=<learner iteration> seconds=<time the save took>
        on the learner, after each save into DI_CHECKPOINT_DIR.
    dihera-terminated iter=<learner iteration> saved=<1: saved now, 0: already saved>
        on the learner with DI_CHECKPOINT_DIR, once, on SIGTERM, just before it exits 143.
    dihera-model params=<parameters> bytes=<pickled state_dict> digest=<extra weight's sha256, 16 hex>
        on the learner, once at start, only with DIHERA_EXTRA_PARAMS > 0.
    dihera-model-received role=collector node=<node id> params=<parameters> digest=<...>
        on a collector, only with DIHERA_EXTRA_PARAMS > 0: once, the first time a model sent by the
        learner was loaded (train_iter > 0 and its extra weight no longer its own); the digest then
        equals the learner's.

When `ARGO_PROGRESS_FILE` is set, the learner also appends `<iterations>/<budget>` lines to it
(Argo's self-reported progress reads the last line); the budget is `DIHERA_TRAIN_ITER_BUDGET`
(default 2000), a scale for the bar, not a limit.

Environment read by this example (user code, read once in `settings`; DI-engine itself reads only
DI_RANK and DI_NODES): `DI_RANK` (the per-process seed), `DI_NODES` (the world size in `dihera-role`),
`DIHERA_LEARNER_FRESH` (seconds, default 10), `DIHERA_LEARNER_WAIT` (seconds, default 600; 0 never
holds a batch), `DIHERA_EXTRA_PARAMS` (default 0: off; e.g. 1690000 adds an unused 1300 x 1300 weight,
an Atari DQN's size, to the exchanged model), `DIHERA_TRAIN_ITER_BUDGET`, `ARGO_PROGRESS_FILE`,
`DI_CHECKPOINT_DIR` and `DIHERA_CHECKPOINT_EVERY` (iterations, default 100); in a sweep's trial
(docs/experiments.md) `DIHERA_PARAM_LR` (the learning rate), `DIHERA_SEED` (the config's seed, each
process adding its rank) and `DIHERA_TRIAL`: with it, the evaluator reports `evalReturn`,
`evalReturnBest`, `evalIteration` and `evalReturnHistory` (the last 100) after each evaluation to the
di-server (`DI_SERVER_URL`, `DI_JOB_ID`, the pod's ServiceAccount token), into the DIJob's
`status.profilings` (metrics.py; a failed report logs `dihera-metrics-failed error=<type>
detail=<text>`). With `DI_SERVER_URL`, `DI_JOB_ID` and `DI_CHECKPOINT_DIR`, the learner reports each
checkpoint it saved into `status.profilings.checkpoint` the same way (docs/checkpoints.md). Output goes
to `./cartpole_dqn_dist/` in the working directory, which must be writable; the learner writes the config
files there once subscribed.
"""
