"""Solitons of the nonlinear Schrödinger equation by split-step Fourier, compiled with torchcx.

The focusing NLS equation, in the normalization of optical fibres and
Bose-Einstein condensates,

    i psi_t + psi_xx / 2 + |psi|^2 psi = 0,

has the fundamental soliton (amplitude eta, velocity v, start x0)

    psi(x, t) = eta sech(eta (x - x0 - v t)) exp(i [v (x - x0) + (eta^2 - v^2) t / 2]),

which travels without changing shape. The split-step Fourier method solves
the dispersive part exactly in Fourier space (psi_hat -> exp(-i k^2 dt / 2)
psi_hat) and the nonlinear part exactly in real space (psi -> exp(i |psi|^2 dt)
psi, which keeps |psi|); Strang's symmetric splitting makes it second order
in dt. Periodic boundaries are harmless while the solitons stay far from them.

Checks:

* a batch of solitons of different amplitudes and velocities keeps its shape:
  max |psi - psi_exact| / eta < 1e-3 at the end (complex64: float32 rounding
  of about 1e-7 per step adds up over the run, and the splitting error is
  O(dt^2 eta^6 t));
* the mass int |psi|^2 dx = 2 eta and the energy
  int |psi_x|^2 / 2 - |psi|^4 / 2 dx = eta v^2 - eta^3 / 3 are conserved;
* two solitons collide and come out unchanged (NLS is integrable), each
  displaced forward by dx = ln[((v1 - v2)^2 + (a1 + a2)^2) / ((v1 - v2)^2 + (a1 - a2)^2)] / a
  (Zakharov and Shabat 1972, in this equation's units);
* the compiled solver matches eager.

    python examples/nls_soliton.py [--small] [--out DIR]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch
from _util import Checks, parser, pyplot, report_times, time_side_by_side
from torch import Tensor

import torchcx


def split_step(psi: Tensor, kinetic: Tensor, dt: float, steps: int) -> Tensor:
    """``steps`` Strang steps: half a nonlinear step, a dispersive step, half a nonlinear step.

    ``kinetic`` is exp(-i k^2 dt / 2) on the FFT's wavenumbers.
    """
    for _ in range(steps):
        psi = psi * torch.exp(0.5j * dt * psi.abs() ** 2)
        psi = torch.fft.ifft(kinetic * torch.fft.fft(psi))
        psi = psi * torch.exp(0.5j * dt * psi.abs() ** 2)
    return psi


def soliton(x: Tensor, t: float, eta: Tensor, v: Tensor, x0: Tensor) -> Tensor:
    """The exact fundamental soliton (float64 in, complex128 out)."""
    phase = v * (x - x0) + 0.5 * (eta**2 - v**2) * t
    return eta / torch.cosh(eta * (x - x0 - v * t)) * torch.exp(1j * phase)


def mass(psi: Tensor, dx: float) -> Tensor:
    return (psi.abs() ** 2).sum(-1) * dx


def energy(psi: Tensor, k: Tensor, dx: float) -> Tensor:
    """int |psi_x|^2 / 2 - |psi|^4 / 2 dx, the derivative taken spectrally."""
    psi_x = torch.fft.ifft(1j * k * torch.fft.fft(psi))
    return 0.5 * ((psi_x.abs() ** 2).sum(-1) - (psi.abs() ** 4).sum(-1)) * dx


@dataclass
class Grid:
    n: int
    length: float

    @property
    def dx(self) -> float:
        return self.length / self.n

    def x(self) -> Tensor:
        return (torch.arange(self.n, dtype=torch.float64) - self.n // 2) * self.dx

    def k(self) -> Tensor:
        return 2 * math.pi * torch.fft.fftfreq(self.n, d=self.dx, dtype=torch.float64)


def collision_shift(a1: float, v1: float, a2: float, v2: float) -> float:
    """Forward displacement of soliton 1 after it has passed soliton 2."""
    dv2 = (v1 - v2) ** 2
    return math.log((dv2 + (a1 + a2) ** 2) / (dv2 + (a1 - a2) ** 2)) / a1


def centre_of_mass(psi: Tensor, x: Tensor, where: Tensor) -> float:
    density = psi.abs().double() ** 2 * where
    return ((density * x).sum() / density.sum()).item()


def run(small: bool, out: Path) -> dict[str, float]:
    grid = Grid(n=256 if small else 1024, length=60.0)
    dt, t_end = 0.01, 10.0
    steps_per_frame = 2 if small else 10  # steps unrolled into one compiled graph
    frames = round(t_end / dt) // steps_per_frame
    x, k = grid.x(), grid.k()

    # A family of single solitons (eta, v), each starting where it ends up as far right as it started left.
    n_eta, n_v = (2, 2) if small else (4, 4)
    eta = torch.linspace(0.5, 1.0, n_eta, dtype=torch.float64).repeat_interleave(n_v)[:, None]
    v = torch.linspace(-1.0, 1.0, n_v, dtype=torch.float64).repeat(n_eta)[:, None]
    x0 = -v * t_end / 2
    singles = soliton(x, 0.0, eta, v, x0)
    # Two solitons of amplitude 1 heading for each other; they meet at t = 6.
    a, speed, start = 1.0, 1.5, 9.0
    pair = soliton(x, 0.0, torch.tensor(a), torch.tensor(speed), torch.tensor(-start))
    pair = pair + soliton(x, 0.0, torch.tensor(a), torch.tensor(-speed), torch.tensor(start))
    psi0 = torch.cat([singles, pair[None]]).to(torch.complex64)
    # exp(-i k^2 dt / 2) in float64, rounded once: rounding the angle in float32 would shift every step alike.
    kinetic = torch.exp(-0.5j * dt * k**2).to(torch.complex64)
    print(f"NLS split-step: {len(psi0) - 1} solitons + one collision, {grid.n} points, dt {dt}, t = {t_end}")

    solver = torchcx.compile(split_step)
    psi = psi0
    history = [psi0[-1].abs()]
    for _ in range(frames):
        psi = solver(psi, kinetic, dt, steps_per_frame)
        history.append(psi[-1].abs())

    checks = Checks()
    eager_frame = split_step(psi0, kinetic, dt, steps_per_frame)
    compiled_frame = solver(psi0, kinetic, dt, steps_per_frame)
    checks.below("compiled vs eager after one frame (max abs)", (compiled_frame - eager_frame).abs().max().item(), 1e-5)

    exact = soliton(x, t_end, eta, v, x0)
    shape_error = ((psi[:-1].to(torch.complex128) - exact).abs().amax(-1) / eta.squeeze(-1)).max().item()
    checks.below("single solitons: max |psi - psi_exact| / eta", shape_error, 1e-3)
    psi0_64, psi_64 = psi0.to(torch.complex128), psi.to(torch.complex128)
    mass_drift = ((mass(psi_64, grid.dx) - mass(psi0_64, grid.dx)).abs() / mass(psi0_64, grid.dx)).max().item()
    checks.below("mass drift (relative, worst field)", mass_drift, 1e-3)
    e0, e1 = energy(psi0_64, k, grid.dx), energy(psi_64, k, grid.dx)
    e_exact = (eta * v**2 - eta**3 / 3).squeeze(-1)
    checks.below("initial energy vs eta v^2 - eta^3/3 (max abs)", (e0[:-1] - e_exact).abs().max().item(), 1e-5)
    checks.below("energy drift (max abs)", (e1 - e0).abs().max().item(), 1e-3)

    right, left = (x > 0).double(), (x < 0).double()
    theory = collision_shift(a, speed, a, -speed)
    shifts = (
        centre_of_mass(psi[-1], x, right) - (-start + speed * t_end),
        -(centre_of_mass(psi[-1], x, left) - (start - speed * t_end)),
    )
    print(f"  collision: shifts {shifts[0]:.4f}, {shifts[1]:.4f}; theory {theory:.4f}")
    checks.below("collision shift vs theory (max abs)", max(abs(s - theory) for s in shifts), 1e-2)
    # each emerging soliton carries its mass 2a (amplitude a) out of the collision
    amplitudes = (mass(psi[-1] * right, grid.dx).item() / 2, mass(psi[-1] * left, grid.dx).item() / 2)
    checks.below("amplitude after the collision vs before", max(abs(b - a) for b in amplitudes), 1e-3)

    print("time per frame of", steps_per_frame, "steps (median, interleaved):")
    times = time_side_by_side(
        {
            "eager": lambda: split_step(psi0, kinetic, dt, steps_per_frame),
            "torchcx.compile": lambda: solver(psi0, kinetic, dt, steps_per_frame),
        },
        repeat=5 if small else 20,
    )
    report_times(times)

    plot(out / "nls_soliton.png", x, torch.stack(history), t_end, psi[:-1], exact)
    checks.finish()
    return {
        "shape error": shape_error,
        "mass drift": mass_drift,
        "collision shift error": max(abs(s - theory) for s in shifts),
        "speedup": times["eager"] / times["torchcx.compile"],
    }


def plot(path: Path, x: Tensor, history: Tensor, t_end: float, final: Tensor, exact: Tensor) -> None:
    plt = pyplot()
    if plt is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4.2))
    ax0.imshow(
        history.numpy(),
        origin="lower",
        aspect="auto",
        extent=(x[0].item(), x[-1].item(), 0.0, t_end),
        cmap="magma",
    )
    ax0.set(xlabel="x", ylabel="t", title="two-soliton collision, |psi(x, t)|")
    for i in range(len(final)):
        (line,) = ax1.plot(x, exact[i].abs(), lw=1)
        ax1.plot(x[::4], final[i, ::4].abs(), ".", ms=3, color=line.get_color())
    ax1.set(xlabel="x", ylabel="|psi|", title=f"single solitons at t = {t_end}: split-step (dots), exact (lines)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"  figure: {path}")


def main(argv: list[str] | None = None) -> dict[str, float]:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    return run(args.small, args.out)


if __name__ == "__main__":
    main()
