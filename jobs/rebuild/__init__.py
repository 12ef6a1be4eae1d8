"""Full projection rebuilds: export -> partitioned replay (Spark or local) -> shadow -> catch-up -> swap."""

from jobs.rebuild.run import RebuildOptions, RebuildReport, rebuild

__all__ = ["RebuildOptions", "RebuildReport", "rebuild"]
