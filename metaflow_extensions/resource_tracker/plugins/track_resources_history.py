"""History for @track_resources: the library's reader of earlier runs
(:mod:`resource_tracker.metaflow_history`), under the name earlier versions of this
extension gave it."""

from resource_tracker.metaflow_history import (  # noqa: F401  (importable from here, as before)
    STAT_KEYS,
    HistoryLookup,
    Stats,
    artifact_record,
    run_records,
    stats_from_artifact,
    summarize_history,
)
