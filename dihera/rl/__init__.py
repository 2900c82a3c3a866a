"""What dihera understands of a reinforcement-learning job (pure): the figures its replicas report and
the decisions made from them.

- ``figures``: the shape of ``status.training`` (the learner's iteration and rate, env steps, policy lag,
  evaluation returns, the learner's data-wait fraction, a bounded learning curve)
"""
