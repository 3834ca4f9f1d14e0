"""The rule checker (``check``, its property checks and driver) and the
sample table every test reads."""

from .check import CHECKS as CHECKS
from .check import check as check
from .check import check_all as check_all
from .check import manifest_gaps as manifest_gaps
from .report import Report as Report
