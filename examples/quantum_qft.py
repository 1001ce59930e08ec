"""A quantum state-vector simulator running the quantum Fourier transform gate by gate, compiled with torchcx.

The state of n qubits is a complex tensor of shape ``(2,) * n``; axis i is
qubit i and qubit 0 is the most significant bit of the basis index, so
``state.reshape(-1)[j]`` is the amplitude of |j>. Gates act as fast
simulators apply them: a one-qubit gate mixes the two halves of the state
along its qubit's axis, a controlled phase multiplies the amplitudes whose
two qubits are both 1, a CNOT swaps halves, and a SWAP relabels two axes.

The QFT circuit (Nielsen and Chuang, section 5.1) is, for each qubit j in
turn, a Hadamard on j and controlled phases R_k = diag(1, exp(2 pi i / 2^k))
on j from the qubits j + k - 1 after it; then swaps that reverse the qubit
order. It maps |x> to sum_y exp(2 pi i x y / N) |y> / sqrt(N), N = 2^n.

To compile one kernel for all n layers, the simulator relabels qubits after
each layer so that the next target is always axis 0 (``movedim``, free), and
gives every layer a controlled phase from each other qubit, with angle 0
(exactly the identity) where the circuit has none. Inductor fuses a layer's
n gates into a pass or two over the state; eager makes one or more passes per gate.

Checks:

* the QFT of a random state equals its normalized discrete Fourier transform
  with the QFT's sign convention, ``torch.fft.ifft(x, norm="ortho")``;
* the GHZ circuit (a Hadamard and a chain of CNOTs) gives probability 1/2 to
  |0...0> and |1...1>, to one float32 rounding of 1/sqrt(2) squared, and
  exactly 0 to every other basis state;
* the compiled simulator matches eager, and unitarity keeps the norm.

    python examples/quantum_qft.py [--small]
"""

from __future__ import annotations

import math

import torch
from _util import Checks, parser, report_times, time_side_by_side
from torch import Tensor

import torchcx

DTYPE = torch.complex64
HADAMARD = torch.tensor([[1, 1], [1, -1]], dtype=DTYPE) / math.sqrt(2)


# -- gates --------------------------------------------------------------------------------------


def apply_1q(state: Tensor, u: Tensor, q: int) -> Tensor:
    """The 2 x 2 unitary ``u`` on qubit ``q``."""
    a, b = state.select(q, 0), state.select(q, 1)
    return torch.stack((u[0, 0] * a + u[0, 1] * b, u[1, 0] * a + u[1, 1] * b), dim=q)


def apply_controlled_phase(state: Tensor, phase: Tensor, a: int, b: int) -> Tensor:
    """diag(1, 1, 1, phase) on qubits ``a``, ``b``: the amplitudes where both are 1 get ``phase``."""
    shape = [2 if i in (a, b) else 1 for i in range(state.dim())]
    both_one = torch.tensor([[False, False], [False, True]]).view(shape)
    return torch.where(both_one, state * phase, state)


def apply_cnot(state: Tensor, control: int, target: int) -> Tensor:
    """Flip ``target`` where ``control`` is 1."""
    target_in_half = target - 1 if target > control else target  # its axis once ``control``'s is selected
    return torch.stack((state.select(control, 0), state.select(control, 1).flip(target_in_half)), dim=control)


def apply_swap(state: Tensor, a: int, b: int) -> Tensor:
    """Exchange qubits ``a`` and ``b``: a relabeling of axes (a view)."""
    return state.transpose(a, b)


# -- circuits -----------------------------------------------------------------------------------


def qft_layer(state: Tensor, angles: Tensor) -> Tensor:
    """Hadamard on qubit 0, phase exp(i angles[m - 1]) controlled by each qubit m; then qubit 1 becomes qubit 0."""
    state = apply_1q(state, HADAMARD, 0)
    phases = torch.polar(torch.ones_like(angles), angles)
    for m in range(1, state.dim()):
        state = apply_controlled_phase(state, phases[m - 1], m, 0)
    # contiguous, so that every layer sees its input in the same memory layout (one compiled graph)
    return state.movedim(0, -1).contiguous()


def layer_angles(n: int, j: int) -> Tensor:
    """The controlled-phase angles of layer j, by axis m = 1 .. n-1 (axis m holds qubit j + m while j + m < n)."""
    return torch.tensor([2 * math.pi / 2 ** (m + 1) if j + m < n else 0.0 for m in range(1, n)])


def qft(state: Tensor, layer=qft_layer) -> Tensor:  # noqa: ANN001  (eager or compiled layer)
    n = state.dim()
    for j in range(n):
        state = layer(state, layer_angles(n, j))
    # n relabelings make a full cycle: axis i is qubit i again; now reverse the order
    for i in range(n // 2):
        state = apply_swap(state, i, n - 1 - i)
    return state


def ghz(state: Tensor) -> Tensor:
    state = apply_1q(state, HADAMARD, 0)
    for q in range(state.dim() - 1):
        state = apply_cnot(state, q, q + 1)
    return state


def basis_state(n: int, index: int = 0) -> Tensor:
    state = torch.zeros(2**n, dtype=DTYPE)
    state[index] = 1
    return state.view((2,) * n)


# -- the demo -----------------------------------------------------------------------------------


def relative_error(a: Tensor, b: Tensor) -> float:
    return (torch.linalg.vector_norm(a - b) / torch.linalg.vector_norm(b)).item()


def run(small: bool) -> dict[str, float]:
    n = 8 if small else 16
    print(f"QFT on {n} qubits: {n * (n + 1) // 2 + n // 2} gates on {2**n} amplitudes (complex64)")
    g = torch.Generator().manual_seed(0)
    state = torch.randn(2**n, dtype=DTYPE, generator=g)
    state = (state / torch.linalg.vector_norm(state)).view((2,) * n)

    compiled_layer = torchcx.compile(qft_layer)
    result = qft(state, compiled_layer).reshape(-1)
    reference = torch.fft.ifft(state.reshape(-1), norm="ortho")

    checks = Checks()
    qft_error = relative_error(result, reference)
    checks.below("QFT vs ifft(x, norm='ortho') (relative)", qft_error, 1e-5)
    checks.below("compiled vs eager (relative)", relative_error(result, qft(state).reshape(-1)), 1e-6)
    checks.below("norm change", abs(torch.linalg.vector_norm(result).item() - 1), 1e-5)

    p = torchcx.compile(ghz)(basis_state(n)).reshape(-1).abs() ** 2
    ends = p[[0, -1]]
    # float32(1/sqrt 2)^2 = 0.49999997: 1/2 within one float32 ulp
    checks.below("GHZ: |p(0...0) - 1/2|, |p(1...1) - 1/2|", (ends - 0.5).abs().max().item(), 6e-8)
    checks.below("GHZ: total probability of the other states", p[1:-1].sum().item(), 1e-45)  # exactly 0

    print("time per QFT (median, interleaved):")
    times = time_side_by_side(
        {"eager": lambda: qft(state), "torchcx.compile": lambda: qft(state, compiled_layer)},
        repeat=3 if small else 10,
    )
    report_times(times)
    checks.finish()
    return {"QFT error": qft_error, "speedup": times["eager"] / times["torchcx.compile"]}


def main(argv: list[str] | None = None) -> dict[str, float]:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    return run(args.small)


if __name__ == "__main__":
    main()
