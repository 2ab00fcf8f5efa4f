"""What work takes on a machine (`tp_dialect.machine`): each op's roofline time, each
all-reduce algorithm's, and how links carry transfers."""
