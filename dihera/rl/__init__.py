"""What dihera understands of a reinforcement-learning job (pure): the figures its replicas report and
the decisions made from them (the figures' shape, ``status.training``, is :mod:`dihera.shapes.training`).

- ``merge``: the replicas' newest reports merged into ``status.training`` (sums, lag, best, the curve)
- ``curve``: the learning curve as SVG (the di-server's view of a job)
- ``autoscale``: how many collectors a job should run, from a recorded series of those figures (HPA's
  stabilization windows and rate policies, stated for collectors)
- ``policies``: whether the figures end the job (``spec.trainingPolicy``: a target reached, a plateau, NaN)
"""
