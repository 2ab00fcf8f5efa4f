"""Analyses over tp programs, read by the passes, the runtime and the tools, one folder a
concern: ``certify`` (chip provenance and the shard obligation), ``schedule`` (what runs
when and where: touch sets, crossings, phases, halts, the relay's rounds), ``timing`` (what
work costs on a machine), ``calls`` (outlined calls) and ``split`` (tp-split's plan);
``values`` sees through the structure lowering adds, for all of them."""
