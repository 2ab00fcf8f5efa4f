"""Analyses over tp programs, read by the passes, the runtime and the tools. At the top,
what every analysis builds on: ``values`` (seeing through the structure lowering adds),
``touch`` (what a statement reads and writes), ``rounds`` (the relay's steps). Then one
folder a concern, importing one way: ``calls`` (outlined calls), then ``certify`` (chip
provenance and the shard obligation) and ``schedule`` (what runs when and where: crossings,
phases, halts, per-chip programs), ``timing`` (what work costs on a machine) and ``split``
(tp-split's plan)."""
