"""A Fourier neural operator learning 2D Darcy flow, trained with torchcx-compiled forward and backward.

Darcy flow in a periodic porous medium: given the permeability a(x) > 0 and a
fixed source f, the pressure u solves

    -div(a grad u) = f   on the unit torus,   mean(u) = 0.

The data are generated here: a = exp(g) with g a smooth Gaussian random field,
and u from a pseudo-spectral discretization (derivatives by FFT) solved by
conjugate gradients, preconditioned with the inverse Laplacian (exact for
constant a, so the iteration count depends only on the contrast of a).

The model is the FNO of Li et al. (ICLR 2021) as its reference code writes
it: each Fourier layer takes ``rfft2``, multiplies the lowest modes by
complex weights (``nn.Parameter`` of dtype cfloat, contracted with einsum),
writes them into a zero spectrum and returns with ``irfft2``. Adam updates
the complex weights. ``torchcx.compile`` lowers forward and backward
(complex gradients included) to real Inductor kernels.

Checks:

* the solver reproduces a manufactured solution (u = sin 2pi x sin 2pi y for
  a = 1 + sin(2pi x) / 2, with f worked out by hand) to 1e-10;
* the training loss falls, and the trained operator predicts the pressure of
  unseen permeabilities within a bounded relative L2 error;
* compiled training (same initial weights, same batches) follows eager
  training step by step.

    python examples/fno_darcy.py [--small]
"""

from __future__ import annotations

import copy
import math
import statistics
import time

import torch
import torch.nn.functional as F
from _util import Checks, parser, report_times
from torch import Tensor, nn

import torchcx

# -- the physics: a pseudo-spectral Darcy solver ----------------------------------------------


class Torus:
    """An s x s periodic grid on [0, 1)^2 with spectral derivatives (float64)."""

    def __init__(self, s: int) -> None:
        self.s = s
        self.x = torch.arange(s, dtype=torch.float64) / s
        kx = 2 * math.pi * torch.fft.fftfreq(s, 1 / s, dtype=torch.float64)
        ky = 2 * math.pi * torch.fft.rfftfreq(s, 1 / s, dtype=torch.float64)
        # The Nyquist mode has no derivative on the grid (its sine part vanishes there): setting
        # its wavenumber to 0 keeps the discrete derivative real and skew-symmetric, so that
        # -div(a grad) is symmetric positive semi-definite and CG applies.
        kx[s // 2], ky[-1] = 0.0, 0.0
        self.kx, self.ky = kx[:, None], ky[None, :]
        k2 = self.kx**2 + self.ky**2
        # the inverse Laplacian on the modes that have a gradient (0 on the constant, Nyquist-only modes)
        self.inv_k2 = torch.where(k2 > 0, 1 / k2.clamp(min=1e-30), 0.0)

    def grid(self) -> tuple[Tensor, Tensor]:
        return torch.meshgrid(self.x, self.x, indexing="ij")

    def grad(self, u: Tensor) -> tuple[Tensor, Tensor]:
        u_hat, shape = torch.fft.rfft2(u), u.shape[-2:]
        return torch.fft.irfft2(1j * self.kx * u_hat, s=shape), torch.fft.irfft2(1j * self.ky * u_hat, s=shape)

    def div(self, vx: Tensor, vy: Tensor) -> Tensor:
        div_hat = 1j * self.kx * torch.fft.rfft2(vx) + 1j * self.ky * torch.fft.rfft2(vy)
        return torch.fft.irfft2(div_hat, s=vx.shape[-2:])

    def darcy(self, a: Tensor, u: Tensor) -> Tensor:
        """-div(a grad u)."""
        ux, uy = self.grad(u)
        return -self.div(a * ux, a * uy)

    def project(self, f: Tensor) -> Tensor:
        """``f`` without the modes -div(a grad) cannot produce (mean and Nyquist-only modes)."""
        return torch.fft.irfft2(torch.fft.rfft2(f) * (self.inv_k2 > 0), s=f.shape[-2:])

    def solve_darcy(self, a: Tensor, f: Tensor, tol: float = 1e-9, max_iter: int = 500) -> Tensor:
        """u with -div(a grad u) = f, by preconditioned CG, batched over a's leading dim.

        ``tol`` bounds the relative residual: far below the float32 the data are stored in.
        """
        mean_a = a.mean(dim=(-2, -1), keepdim=True)

        def precondition(r: Tensor) -> Tensor:  # (-mean(a) laplacian)^-1
            return torch.fft.irfft2(torch.fft.rfft2(r) * self.inv_k2, s=r.shape[-2:]) / mean_a

        def dot(p: Tensor, q: Tensor) -> Tensor:
            return (p * q).sum(dim=(-2, -1), keepdim=True)

        b = self.project(f).expand_as(a)
        b_norm = b.norm(dim=(-2, -1), keepdim=True)
        u = torch.zeros_like(a)
        r = b.clone()
        z = precondition(r)
        p, rz = z, dot(r, z)
        for _ in range(max_iter):
            # samples that have converged stop moving (their next step would divide 0 by 0)
            active = r.norm(dim=(-2, -1), keepdim=True) > tol * b_norm
            if not active.any():
                return u
            ap = self.darcy(a, p)
            alpha = torch.where(active, rz / dot(p, ap), 0.0)
            u, r = u + alpha * p, r - alpha * ap
            z = precondition(r)
            rz, rz_old = dot(r, z), rz
            p = z + torch.where(active, rz / rz_old, 0.0) * p
        raise RuntimeError(f"CG did not converge in {max_iter} iterations")

    def random_field(self, n: int, g: torch.Generator, alpha: float = 3.0, tau: float = 3.0) -> Tensor:
        """Gaussian random fields with covariance (tau^2 - laplacian)^-alpha, scaled to unit std."""
        k2 = self.kx**2 + self.ky**2
        amplitude = (tau**2 + k2) ** (-alpha / 2)
        noise = torch.randn(n, self.s, self.s // 2 + 1, dtype=torch.complex128, generator=g)
        field = torch.fft.irfft2(noise * amplitude, s=(self.s, self.s))
        field = field - field.mean(dim=(-2, -1), keepdim=True)
        return field / field.std()


def manufactured_error(torus: Torus) -> float:
    """max |u - u_exact| for u_exact = sin(2 pi x) sin(2 pi y), a = 1 + sin(2 pi x) / 2."""
    x, y = torus.grid()
    s, c2 = torch.sin(2 * math.pi * x), torch.cos(4 * math.pi * x)
    a = 1 + 0.5 * s
    u_exact = s * torch.sin(2 * math.pi * y)
    # -d/dx(a du/dx) - a d2u/dy2, worked out by hand:
    f = 4 * math.pi**2 * torch.sin(2 * math.pi * y) * ((1 + a) * s - 0.5 * c2)
    u = torus.solve_darcy(a[None], f)[0]
    return (u - u_exact).abs().max().item()


# -- the model: a Fourier neural operator, as in the reference code -----------------------------


class SpectralConv2d(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, modes1: int, modes2: int) -> None:
        super().__init__()
        self.out_channels, self.modes1, self.modes2 = out_channels, modes1, modes2
        scale = 1 / (in_channels * out_channels)
        shape = (in_channels, out_channels, modes1, modes2)
        self.weights1 = nn.Parameter(scale * torch.rand(*shape, dtype=torch.cfloat))
        self.weights2 = nn.Parameter(scale * torch.rand(*shape, dtype=torch.cfloat))

    def forward(self, x: Tensor) -> Tensor:
        m1, m2 = self.modes1, self.modes2
        x_ft = torch.fft.rfft2(x)
        out_ft = torch.zeros(
            x.shape[0], self.out_channels, x.size(-2), x.size(-1) // 2 + 1, dtype=torch.cfloat, device=x.device
        )
        # the lowest modes, positive and negative frequencies along the first axis
        out_ft[:, :, :m1, :m2] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, :m1, :m2], self.weights1)
        out_ft[:, :, -m1:, :m2] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, -m1:, :m2], self.weights2)
        return torch.fft.irfft2(out_ft, s=(x.size(-2), x.size(-1)))


class FNO2d(nn.Module):
    def __init__(self, in_channels: int, modes: int, width: int, layers: int = 4) -> None:
        super().__init__()
        self.lift = nn.Linear(in_channels + 2, width)  # (input fields, x, y) -> width channels
        self.spectral = nn.ModuleList(SpectralConv2d(width, width, modes, modes) for _ in range(layers))
        self.pointwise = nn.ModuleList(nn.Conv2d(width, width, 1) for _ in range(layers))
        self.project = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, 1))

    def forward(self, fields: Tensor) -> Tensor:
        b, _, s, _ = fields.shape
        coords = torch.linspace(0, 1, s + 1, device=fields.device)[:-1]
        grid = torch.stack(torch.meshgrid(coords, coords, indexing="ij")).expand(b, 2, s, s)
        x = self.lift(torch.cat([fields, grid], dim=1).permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        for i, (spectral, pointwise) in enumerate(zip(self.spectral, self.pointwise)):
            x = spectral(x) + pointwise(x)
            if i < len(self.spectral) - 1:
                x = F.gelu(x)
        return self.project(x.permute(0, 2, 3, 1)).squeeze(-1)


def relative_l2(pred: Tensor, target: Tensor) -> Tensor:
    """Mean over the batch of |pred - target| / |target| (the FNO paper's loss)."""
    return ((pred - target).flatten(1).norm(dim=1) / target.flatten(1).norm(dim=1)).mean()


# -- the demo -----------------------------------------------------------------------------------


def make_data(torus: Torus, n: int, seed: int) -> tuple[Tensor, Tensor]:
    """Inputs (log-permeability, source) of shape (n, 2, s, s) and pressures (n, s, s), float32."""
    g = torch.Generator().manual_seed(seed)
    log_a = torus.random_field(n, g)
    source = torus.project(torus.random_field(n, g, alpha=2.5))  # mean zero, as a periodic source must be
    u = torus.solve_darcy(torch.exp(0.6 * log_a), source)  # permeability contrast of about 5 across a sample
    return torch.stack([log_a, source], dim=1).float(), u.float()


def run(small: bool) -> dict[str, float]:
    s, n_train, n_test, steps, batch = (16, 32, 16, 30, 8) if small else (32, 256, 64, 200, 8)
    modes, width, layers = (4, 8, 2) if small else (8, 16, 4)
    torus = Torus(s)
    checks = Checks()
    checks.below("Darcy solver vs manufactured solution (max abs)", manufactured_error(torus), 1e-10)

    start = time.perf_counter()
    x_train, u_train = make_data(torus, n_train, seed=0)
    x_test, u_test = make_data(torus, n_test, seed=1)
    u_scale = u_train.std()  # train on pressures of unit scale
    print(f"data: {n_train} + {n_test} Darcy solutions on {s}x{s} in {time.perf_counter() - start:.1f} s")

    torch.manual_seed(0)
    eager_model = FNO2d(2, modes, width, layers)
    compiled_model = copy.deepcopy(eager_model)
    runs = {"eager": eager_model, "torchcx.compile": torchcx.compile(compiled_model)}
    optimizers = {"eager": torch.optim.Adam(eager_model.parameters(), lr=1e-2)}
    optimizers["torchcx.compile"] = torch.optim.Adam(compiled_model.parameters(), lr=1e-2)
    schedulers = {name: torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps) for name, opt in optimizers.items()}
    losses: dict[str, list[float]] = {name: [] for name in runs}
    step_times: dict[str, list[float]] = {name: [] for name in runs}
    g = torch.Generator().manual_seed(2)
    print(
        f"FNO: {layers} Fourier layers, {modes} modes, width {width}; {steps} Adam steps of batch {batch}, eager and compiled in lockstep"
    )
    for step in range(steps):
        idx = torch.randint(n_train, (batch,), generator=g)
        for name, model in runs.items():
            start = time.perf_counter()
            optimizers[name].zero_grad()
            loss = relative_l2(model(x_train[idx]), u_train[idx] / u_scale)
            loss.backward()
            optimizers[name].step()
            schedulers[name].step()
            step_times[name].append(time.perf_counter() - start)
            losses[name].append(loss.item())
        if step % max(1, steps // 5) == 0 or step == steps - 1:
            eager_loss, compiled_loss = losses["eager"][-1], losses["torchcx.compile"][-1]
            print(f"  step {step:4d}  loss: eager {eager_loss:.4f}, compiled {compiled_loss:.4f}")

    with torch.no_grad():
        test_error = relative_l2(runs["torchcx.compile"](x_test) * u_scale, u_test).item()
    first, last = losses["torchcx.compile"][0], sum(losses["torchcx.compile"][-10:]) / 10
    checks.below("training loss, last 10 steps / first step", last / first, 0.8 if small else 0.3)
    # predicting the mean pressure would score about 1: the sources differ from sample to sample
    checks.below("test relative L2 error (unseen permeabilities and sources)", test_error, 0.9 if small else 0.3)
    drift = max(abs(a - b) / b for a, b in zip(losses["torchcx.compile"], losses["eager"]))
    checks.below("compiled vs eager training: max relative loss difference", drift, 1e-3)

    # the first steps include compilation; the median of the rest is the steady state
    per_step = {name: statistics.median(t[steps // 5 :]) for name, t in step_times.items()}
    print("time per training step (median, after warm-up):")
    report_times(per_step)
    checks.finish()
    return {
        "test error": test_error,
        "loss ratio": last / first,
        "loss drift": drift,
        "speedup": per_step["eager"] / per_step["torchcx.compile"],
    }


def main(argv: list[str] | None = None) -> dict[str, float]:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    return run(args.small)


if __name__ == "__main__":
    main()
