"""tp's command-line tools: tp-opt (and, as they land, tp-gen and tp-run)."""
