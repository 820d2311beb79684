"""An example extension package of tabbench (README.md beside pyproject.toml).

Nothing is imported here: tabbench loads the entry points' modules itself, and only the one it
is asked for (:mod:`.metric` for the metric; :mod:`.registration` for the model, whose trainer
and search space are imported only when the model trains or samples a config).
"""
