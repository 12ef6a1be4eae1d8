"""``python -m jobs`` runs the tessera command line."""

from jobs.cli import main

main()
