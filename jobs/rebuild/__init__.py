"""Full projection rebuilds: export -> partitioned replay (Spark or local) -> shadow -> catch-up -> swap."""

from jobs.rebuild.run import RebuildReport, RebuildRequest, rebuild

__all__ = ["RebuildReport", "RebuildRequest", "rebuild"]
