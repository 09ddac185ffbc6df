"""The old name of :mod:`tieeval.records.results` (``from tieeval.results import
RunResult`` keeps working): this module is that one."""

import sys

from tieeval.records import results

sys.modules[__name__] = results
