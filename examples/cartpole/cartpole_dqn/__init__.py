"""Distributed DQN on CartPole for a DIJob, started with `ditask --platform k8s`.

    ditask --platform k8s --topology mesh --labels <learner|evaluator|collector> \
        --package <dir holding this package> --main cartpole_dqn.main.main --ports <port>

One process per replica: learner, evaluator and any number of collectors, joined in DI-engine's mesh
(rank r dials ranks 0..r-1 on the same port). The role comes from `--labels`, else from the node id
(0 learner, 1 evaluator, others collectors). Training stops when the evaluator's mean return reaches
the stop value (195, CartPole-v0's "solved"); every process then exits 0.

Log-line contract (stable; one line each on stdout, `key=value` fields separated by one space, parsed
by the platform and the tests; other DI-engine output is interleaved and must be ignored):

    dihera-role role=<role> node=<node id> world=<replicas>
        once, at start.
    dihera-connected role=<role> node=<node id> peers=<n>
        once, when the start-up barrier passed (every peer attached), or
    dihera-barrier-timeout role=<role> node=<node id> waited=<seconds>
        once, when the barrier timed out (e.g. a replica joining a running job); training goes on.
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

When `ARGO_PROGRESS_FILE` is set, the learner also appends `<iterations>/<budget>` lines to it
(Argo's self-reported progress reads the last line); the budget is `DIHERA_TRAIN_ITER_BUDGET`
(default 2000), a scale for the bar, not a limit.

Environment read by this example (user code; DI-engine itself reads only DI_RANK and DI_NODES):
`DI_NODES` (world size for the barrier), `DIHERA_BARRIER_TIMEOUT` (seconds, default 300; 0 skips the
barrier), `DI_MEMBERSHIP_GENERATION` (past 1: the replica joins a running job and skips the barrier),
`DIHERA_TRAIN_ITER_BUDGET`, `ARGO_PROGRESS_FILE`. Output goes to `./cartpole_dqn_dist/` in
the working directory, which must be writable.
"""
