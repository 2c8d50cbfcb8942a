"""Hypothesis budgets for the fuzz suites.

CI runs every suite with a small fixed example budget (`make test`).
`make fuzz` sets LACKJAIL_FUZZ_EXAMPLES to a long budget and keeps
hypothesis' example database in `.hypothesis/examples`, so a failure found
there replays on the next run.

Suites whose examples each start a process (a fake worker, a jail) take a
share of `settings.default.max_examples` in their own @settings.
"""

import os

from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

CI_EXAMPLES = 200
LONG = os.environ.get("LACKJAIL_FUZZ_EXAMPLES", "").strip()

if LONG:
    settings.register_profile(
        "lackjail-fuzz",
        max_examples=int(LONG),
        deadline=None,
        database=DirectoryBasedExampleDatabase(".hypothesis/examples"),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        print_blob=True,
    )
else:
    settings.register_profile(
        "lackjail-fuzz",
        max_examples=CI_EXAMPLES,
        deadline=None,
        database=None,  # CI starts clean; a failure prints its reproduction blob
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        print_blob=True,
    )
settings.load_profile("lackjail-fuzz")
