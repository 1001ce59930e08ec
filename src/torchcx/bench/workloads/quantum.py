"""A quantum state-vector simulation: random one- and two-qubit gates applied with einsum.

The state of n qubits is a complex64 tensor of shape ``(2,) * n``; a gate on
qubits ``q`` contracts its input indices with the state's indices ``q``, the
way NumPy-style simulators write it. The circuit alternates two random
single-qubit gates with one random two-qubit gate on neighbouring qubits.

Memory-bound: each gate reads and writes the whole state once.
"""

from __future__ import annotations

import string
from typing import Any

import torch
from torch import Tensor

from ._base import JaxCase, Problem, Workload, to_numpy

Circuit = list[tuple[Tensor, tuple[int, ...]]]


def gate_subscripts(n: int, qubits: tuple[int, ...]) -> str:
    """The einsum applying a gate on ``qubits`` to an ``n``-qubit state, e.g. ``'ab,cb->ca'``."""
    state = string.ascii_letters[:n]
    new = string.ascii_letters[n : n + len(qubits)]
    out = list(state)
    for letter, q in zip(new, qubits):
        out[q] = letter
    return f"{new}{''.join(state[q] for q in qubits)},{state}->{''.join(out)}"


def apply_gate(state: Tensor, gate: Tensor, qubits: tuple[int, ...]) -> Tensor:
    k = len(qubits)
    return torch.einsum(gate_subscripts(state.dim(), qubits), gate.reshape((2,) * 2 * k), state)


def run_circuit(state: Tensor, circuit: Circuit) -> Tensor:
    for gate, qubits in circuit:
        state = apply_gate(state, gate, qubits)
    return state


def _jax_run_circuit(state: Any, gates: list[Any], wires: tuple[tuple[int, ...], ...]) -> Any:
    import jax.numpy as jnp

    for gate, qubits in zip(gates, wires):
        k = len(qubits)
        state = jnp.einsum(gate_subscripts(state.ndim, qubits), gate.reshape((2,) * 2 * k), state)
    return state


def random_unitary(dim: int, g: torch.Generator) -> Tensor:
    q, r = torch.linalg.qr(torch.randn(dim, dim, dtype=torch.complex128, generator=g))
    return (q * (r.diagonal() / r.diagonal().abs())).to(torch.complex64)


def random_circuit(n: int, layers: int, g: torch.Generator) -> Circuit:
    circuit: Circuit = []
    for _ in range(layers):
        for _ in range(2):
            circuit.append((random_unitary(2, g), (int(torch.randint(n, (), generator=g)),)))
        q = int(torch.randint(n - 1, (), generator=g))
        circuit.append((random_unitary(4, g), (q, q + 1)))
    return circuit


def _jax_case(args: tuple[Any, ...]) -> JaxCase:
    state, circuit = args
    wires = tuple(qubits for _, qubits in circuit)

    def run(state: Any, gates: list[Any]) -> Any:
        return _jax_run_circuit(state, gates, wires)

    return JaxCase(run, (to_numpy(state), [to_numpy(gate) for gate, _ in circuit]))


#: (qubits, layers of two single-qubit gates and one two-qubit gate); "full" is
#: the issue's size. Quick mode applies fewer gates: compilers unroll the circuit.
_SIZES = {"smoke": (6, 1), "quick": (18, 3), "full": (18, 10)}


def build(scale: str, device: torch.device) -> Problem:
    n, layers = _SIZES[scale]
    g = torch.Generator().manual_seed(0)
    state = torch.randn((2,) * n, dtype=torch.complex64, generator=g)
    state = (state / torch.linalg.vector_norm(state)).to(device)
    circuit = [(gate.to(device), qubits) for gate, qubits in random_circuit(n, layers, g)]
    amplitudes = 2**n
    return Problem(
        program=run_circuit,
        make_args=lambda: (state, circuit),
        size=f"{n} qubits, {2 * layers} one-qubit + {layers} two-qubit gates",
        bytes=len(circuit) * 2 * 8 * amplitudes,
        flops=sum(8 * 2 ** len(qubits) * amplitudes for _, qubits in circuit),
        tolerance=1e-4,
        jax=_jax_case,
    )


WORKLOADS = [Workload("quantum", "quantum state-vector gates", build)]
