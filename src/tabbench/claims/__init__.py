"""The paper's claims: the catalogue (:mod:`~tabbench.claims.catalogue`: each claim once, as
data), the judge (:mod:`~tabbench.claims.judge`: the numbers and the one verdict rule) and the
rendering (:mod:`~tabbench.claims.render`: ``claims.md``, ``claims.html`` and the
reproduction page's table). The names other packages use are handed on here."""

from tabbench.claims.catalogue import CLAIMS, KINDS, Claim
from tabbench.claims.judge import (
    ALPHA,
    CLAIM_COLUMNS,
    DECLARED_COLUMNS,
    INCONCLUSIVE,
    N_MIN,
    NOT_REPRODUCED,
    PROB,
    REPRODUCED,
    VERDICT_RULE,
    Evidence,
    check_claims,
    claim_differences,
    declared_differences,
    verdict,
)
from tabbench.claims.render import claims_html, claims_markdown, reproduction_table

__all__ = [
    "ALPHA",
    "CLAIMS",
    "CLAIM_COLUMNS",
    "DECLARED_COLUMNS",
    "INCONCLUSIVE",
    "KINDS",
    "N_MIN",
    "NOT_REPRODUCED",
    "PROB",
    "REPRODUCED",
    "VERDICT_RULE",
    "Claim",
    "Evidence",
    "check_claims",
    "claim_differences",
    "claims_html",
    "claims_markdown",
    "declared_differences",
    "reproduction_table",
    "verdict",
]
