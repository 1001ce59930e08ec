"""Note [Small contractions in place]: the broadcast form against the stacked slices, run time
and cold compile, on the suite's quantum circuit and on gates at every position of a state
the graph computed.

    python benchmarks/small_contractions.py [--qubits 18] [--positions all|none|0,9,16-17] [--sizes 10,14,22] [--rounds 21]

Programs: the suite's 30-gate circuit (18 qubits), its forward and backward with respect
to every gate ("circuit fw+bw"), 9-gate circuits on states of ``--sizes`` qubits, and for
each qubit q (and each pair of
neighbours) a first gate on qubit 0 followed by the gate on q, so that the gate reads a value
the graph computed, as inside a circuit. Modes: eager; "stacked", each output slice a sum of
products and the slices stacked (``_BROADCAST_PRODUCTS`` off); "broadcast", one product per
summed index computing every output slice. Each compiled mode's first call is its cold compile
(caches off); the modes are then timed interleaved in one process (benchmarks/_switched.py).
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from _switched import compiled_with, parse_options, time_interleaved

import torchcx._graph_passes as passes
from torchcx.bench.workloads import WORKLOADS
from torchcx.bench.workloads.quantum import apply_gate, random_circuit, random_unitary, run_circuit


def _two_gates(state, first, gate, qubits):
    return apply_gate(apply_gate(state, first, (0,)), gate, qubits)


_STEP = """
def step(state, *gates):
    for gate in gates:
        gate.grad = None
    out = state
    for gate, qubits in zip(gates, wires):
        out = apply_gate(out, gate, qubits)
    loss = out.abs().pow(2)[..., 0].sum()
    loss.backward()  # (a graph break: the compiled backward runs here)
    return loss
"""


def _training_step(wires):
    """The circuit's forward and backward: the gradient of one probability with respect to
    every gate (a variational circuit's step). A new code object per call: the graph break
    at ``backward()`` makes Dynamo compile the step's own frame, which a mode compiled
    later would otherwise find compiled."""
    namespace = {"apply_gate": apply_gate, "wires": wires}
    exec(_STEP, namespace)
    return namespace["step"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--qubits", type=int, default=18)
    parser.add_argument("--positions", default="all", help="'all', 'none' or a comma list like 0,9,16,17,16-17")
    parser.add_argument("--sizes", default="", help="qubit counts of 9-gate circuits to add, like 10,14,22")
    options = parse_options(parser)
    n = options.qubits
    g = torch.Generator().manual_seed(0)
    state = torch.randn((2,) * n, dtype=torch.complex64, generator=g)
    one, two = random_unitary(2, g), random_unitary(4, g)
    # name -> (a maker of the program: a new one per mode where it must be, its arguments)
    programs: dict[str, tuple[Callable[[], Callable[..., Any]], tuple[Any, ...]]] = {}
    problem = WORKLOADS["quantum"].build("full", torch.device("cpu"))
    programs["circuit"] = (lambda: problem.program, problem.make_args())
    circuit_state, circuit = problem.make_args()
    gates = [gate.clone().requires_grad_() for gate, _ in circuit]
    wires = [q for _, q in circuit]
    programs["circuit fw+bw"] = (lambda: _training_step(wires), (circuit_state, *gates))
    for qubits in filter(None, options.sizes.split(",")):
        sized = torch.Generator().manual_seed(0)
        circuit_args = (torch.randn((2,) * int(qubits), dtype=torch.complex64, generator=sized),)
        programs[f"circuit 2^{qubits}, 9 gates"] = (
            lambda: run_circuit,
            (*circuit_args, random_circuit(int(qubits), 3, sized)),
        )
    if options.positions == "all":
        positions = [(q,) for q in range(n)] + [(q, q + 1) for q in range(n - 1)]
    elif options.positions == "none":
        positions = []
    else:
        positions = [tuple(int(q) for q in p.split("-")) for p in options.positions.split(",")]
    for qubits in positions:
        programs["-".join(map(str, qubits))] = (
            lambda: _two_gates,
            (state, one, two if len(qubits) == 2 else one, qubits),
        )

    modes: dict[tuple[str, str], tuple[Callable[..., Any], tuple[Any, ...]]] = {}
    compile_s: dict[tuple[str, str], float] = {}
    for name, (make, args) in programs.items():
        modes[(name, "eager")] = (make(), args)
        expected = modes[(name, "eager")][0](*args).detach()
        for mode, broadcast in (("stacked", False), ("broadcast", True)):
            tag = "p_" + re.sub(r"\W", "_", name) + "_" + mode
            start = time.perf_counter()
            fn = compiled_with(make(), args, tag, [(passes, "_BROADCAST_PRODUCTS", broadcast)])
            compile_s[(name, mode)] = time.perf_counter() - start
            torch.testing.assert_close(fn(*args), expected, rtol=1e-4, atol=1e-4)
            modes[(name, mode)] = (fn, args)
    samples, _ = time_interleaved(modes, options.rounds)
    print(f"{options.threads} thread(s), median of {options.rounds} rounds; first call (cold compile) in s")
    print(
        "| program | eager ms | stacked ms | broadcast ms | broadcast / stacked speed | compile stacked | compile broadcast |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in programs:
        ms = {mode: statistics.median(samples[(name, mode)]) * 1e3 for mode in ("eager", "stacked", "broadcast")}
        print(
            f"| {name} | {ms['eager']:.3f} | {ms['stacked']:.3f} | {ms['broadcast']:.3f} | "
            f"{ms['stacked'] / ms['broadcast']:.2f}x | {compile_s[(name, 'stacked')]:.1f} | "
            f"{compile_s[(name, 'broadcast')]:.1f} |"
        )


if __name__ == "__main__":
    main()
