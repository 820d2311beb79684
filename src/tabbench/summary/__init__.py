"""Judging a study (layer 5 of docs/design.md §2): the selections of every stopping metric
(``select``, under the stopping rules of ``stopping_rules``), how two methods are compared
(``comparisons``), the summary tables (``tables``, ``markdown``, ``view``), the paper's claims
(``claims/``), the stopping rules' cost and quality (``rule_summary``), the Fig. 1 curve
(``curve``), all written into ``results/summary/`` by ``aggregate``.

It reads the per-epoch records and selected files only: never the data folder, never a
figure. Importing the package imports none of its modules (each is imported where used, so
a rule file that needs one name does not pay for pandas' whole summary stack).
"""
