"""tp's command-line tools: tp-opt (the passes), tp-gen (generated programs) and tp-run (the
reference interpreter and the multi-RDU model)."""
