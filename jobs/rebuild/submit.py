"""Entry file for ``spark-submit``: runs ``tessera`` with the given arguments.

    spark-submit --master spark://HOST:7077 jobs/rebuild/submit.py \\
        --db /var/lib/tessera/chat.db rebuild --master spark://HOST:7077

The driver (this process) needs the SQLite file: export, load, catch-up and
swap run here; only the replay runs on the cluster's executors.
"""

from jobs.cli import main

if __name__ == "__main__":
    main()
