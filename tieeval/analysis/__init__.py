"""What is built on evaluated runs: seed groups, the paper's tables, ``check`` gates,
``audit`` verdicts, paired ``diff``/``rank`` statistics and the ``--cast``/``--tolerance``
what-ifs. Imports the engine and below; never click or rich."""
