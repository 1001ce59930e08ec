"""The compile boundary: where a functional complex graph becomes a real one, and back.

Four pieces, one job each (Note [The compile pipeline] in ``backend.py`` says when each runs):

``spec``
    What crosses the boundary, as pure data read off the complex graph: how each input
    is passed, which outputs the kernel computes and which are replayed as views (of
    inputs or of each other), which inputs are written, the graph's constants.
``retrace``
    ``(graph, spec) -> real graph``: every complex op retraced through torchcx's op
    tables into real arithmetic (or an extern kernel call).
``runtime``
    The wrapper around the compiled real graph, built from ``(compiled, spec)``: views
    complex inputs as real and real outputs as complex, replays the aliased outputs.
``report``
    What ``torchcx.explain`` shows of one graph, built from the spec and the real graph.
"""
