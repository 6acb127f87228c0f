"""Layer 1: the run folder on disk: the metrics log, summary and lock (runlog), the folder's files,
checkpoint naming and writability (runfolder)."""
