"""The paper's claims: the catalogue (:mod:`~tabbench.summary.claims.catalogue`: each claim once, as
data), the judge (:mod:`~tabbench.summary.claims.judge`: the numbers and the one verdict rule)
and the rendering (:mod:`~tabbench.summary.claims.render`: ``claims.md``, ``claims.html`` and the
reproduction page's table). The names other packages use are handed on here.

Part of ``summary`` (layer 5 of docs/design.md §2): it imports what ``summary`` may.
"""

from tabbench.summary.claims.catalogue import CLAIMS, KINDS, Claim
from tabbench.summary.claims.judge import (
    ALPHA,
    BORDERLINE,
    CLAIM_COLUMNS,
    DECIDES,
    DECLARED_COLUMNS,
    INCONCLUSIVE,
    N_MIN,
    NOT_REPRODUCED,
    PROB,
    REPRODUCED,
    VERDICT_LEGEND,
    VERDICT_RULE,
    VERDICTS,
    Evidence,
    check_claims,
    claim_differences,
    declared_differences,
    verdict,
)
from tabbench.summary.claims.render import (
    claims_html,
    claims_markdown,
    reproduction_table,
    study_sentence,
)

__all__ = [
    "ALPHA",
    "BORDERLINE",
    "CLAIMS",
    "CLAIM_COLUMNS",
    "DECIDES",
    "DECLARED_COLUMNS",
    "INCONCLUSIVE",
    "KINDS",
    "N_MIN",
    "NOT_REPRODUCED",
    "PROB",
    "REPRODUCED",
    "VERDICTS",
    "VERDICT_LEGEND",
    "VERDICT_RULE",
    "Claim",
    "Evidence",
    "check_claims",
    "claim_differences",
    "claims_html",
    "claims_markdown",
    "declared_differences",
    "reproduction_table",
    "study_sentence",
    "verdict",
]
