"""Statistics shared by every study: intervals that hold their level at small n, one bootstrap, paired tests, multiplicity.

Pure functions on arrays and tidy frames; never imports judges, perturbers or studies.
"""

from .bootstrap import (MAX_BOOTSTRAP_ITEMS, mean_interval, percentile_interval, ratio_interval,
                        resample_counts, resample_indices)
from .paired import (PAIR_COLUMNS, adjust_pvalues, cohens_dz, group_means, largest_gaps, min_detectable_d,
                     paired_matrix, paired_tests, wilcoxon_method)
from .intervals import (clustered_rate_intervals, items_needed_zero_events, mean_interval_t, mover_difference,
                        paired_difference)
from .mcnemar import McNemarResult, mcnemar_exact
from .proportions import newcombe_interval, wilson_interval

__all__ = [
    "resample_indices", "resample_counts", "percentile_interval", "mean_interval", "ratio_interval",
    "MAX_BOOTSTRAP_ITEMS", "wilson_interval", "newcombe_interval", "PAIR_COLUMNS", "paired_tests",
    "paired_matrix", "cohens_dz", "min_detectable_d", "adjust_pvalues", "wilcoxon_method", "largest_gaps",
    "group_means", "McNemarResult", "mcnemar_exact", "clustered_rate_intervals", "mean_interval_t",
    "paired_difference", "mover_difference", "items_needed_zero_events",
]
