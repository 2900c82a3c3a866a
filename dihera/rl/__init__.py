"""What dihera understands of a reinforcement-learning job (pure): the figures its replicas report and
the decisions made from them.

- ``figures``: the shape of ``status.training`` (the learner's iteration and rate, env steps, policy lag,
  evaluation returns, the learner's data-wait fraction, a bounded learning curve)
- ``merge``: the replicas' newest reports merged into ``status.training`` (sums, lag, best, the curve)
- ``curve``: the learning curve as SVG (the di-server's view of a job)
"""
