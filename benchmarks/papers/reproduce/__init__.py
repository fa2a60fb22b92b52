"""Every published claim of the papers the testbed is built from, measured again with
intervals and given a verdict: ``python -m benchmarks.papers.reproduce [--quick] [--only PAPER]
[--out DIR]``.

* ``claims``: the claims' shape and the verdict rules (pure);
* ``thesis``, ``memory``, ``t3d``, ``t3e``, ``cow``: one module per paper, each running the
  benchmarks that reproduce its experiments and reading its claims off their figures;
* ``report``: the Markdown page and the JSON.
"""
