# ocean-physics kernels in the style of pyhpc-benchmarks' PyTorch versions (inference only, under no_grad):
# a tridiagonal solver over the last axis with in-place slice updates in a Python loop, land/water masks from
# torch.arange compared with a per-column index, torch.where with Python scalars, torch.maximum against
# torch.tensor([0.0], device=...), zeros_like + slice writes, `a[...] = 0.0`, a z-padding helper built from
# list(arr.shape), and an equation-of-state polynomial with many float constants
import torch
import tracejit

def solve_tridiag(a, b, c, d):
    assert a.shape == b.shape and a.shape == c.shape and a.shape == d.shape
    n = a.shape[-1]
    for i in range(1, n):
        w = a[..., i] / b[..., i - 1]
        b[..., i] += -w * c[..., i - 1]
        d[..., i] += -w * d[..., i - 1]
    out = torch.empty_like(a)
    out[..., -1] = d[..., -1] / b[..., -1]
    for i in range(n - 2, -1, -1):
        out[..., i] = (d[..., i] - c[..., i] * out[..., i + 1]) / b[..., i]
    return out

def solve_implicit(ks, a, b, c, d, b_edge):
    land_mask = (ks >= 0)[:, :, None]
    levels = torch.arange(a.shape[2], device=ks.device)[None, None, :]
    edge_mask = land_mask & (levels == ks[:, :, None])
    water_mask = land_mask & (levels >= ks[:, :, None])
    a_tri = water_mask * a * torch.logical_not(edge_mask)
    b_tri = torch.where(water_mask, b, 1.0)
    b_tri = torch.where(edge_mask, b_edge, b_tri)
    c_tri = water_mask * c
    d_tri = water_mask * d
    return solve_tridiag(a_tri, b_tri, c_tri, d_tri), water_mask

def pad_z_edges(arr):
    arr_shape = list(arr.shape)
    arr_shape[2] += 2
    out = torch.zeros(arr_shape, dtype=arr.dtype, device=arr.device)
    out[:, :, 1:-1] = arr
    return out

def limiter(cr):
    zero = torch.tensor([0.0], device=cr.device)
    return torch.maximum(zero, torch.maximum(torch.minimum(torch.tensor([1.0], device=cr.device), 2 * cr),
                                             torch.minimum(torch.tensor([2.0], device=cr.device), cr)))

def calc_cr(rjp, rj, rjm, vel):
    eps = 1e-20
    return torch.where(vel > 0.0, rjm, rjp) / torch.where(torch.abs(rj) < eps, eps, rj)

def vertical_mixing(kbot, kappa, dzt, dzw, tke, forc, dt=1.0, c_eps=0.7):
    tau, taup1 = 0, 1
    ks = kbot[2:-2, 2:-2] - 1
    a_tri = torch.zeros_like(kappa[2:-2, 2:-2])
    b_tri = torch.zeros_like(kappa[2:-2, 2:-2])
    c_tri = torch.zeros_like(kappa[2:-2, 2:-2])
    d_tri = torch.zeros_like(kappa[2:-2, 2:-2])
    delta = torch.zeros_like(kappa[2:-2, 2:-2])
    sqrttke = torch.sqrt(torch.maximum(torch.tensor([0.0], device=tke.device), tke[:, :, :, tau]))
    delta[:, :, :-1] = dt / dzt[None, None, 1:] * 0.5 * (kappa[2:-2, 2:-2, :-1] + kappa[2:-2, 2:-2, 1:])
    a_tri[:, :, 1:-1] = -delta[:, :, :-2] / dzw[None, None, 1:-1]
    a_tri[:, :, -1] = -delta[:, :, -2] / (0.5 * dzw[-1])
    b_tri[:, :, 1:-1] = 1 + (delta[:, :, 1:-1] + delta[:, :, :-2]) / dzw[None, None, 1:-1] + dt * c_eps * sqrttke[2:-2, 2:-2, 1:-1]
    b_tri[:, :, -1] = 1 + delta[:, :, -2] / (0.5 * dzw[-1]) + dt * c_eps * sqrttke[2:-2, 2:-2, -1]
    b_edge = 1 + delta / dzw[None, None, :] + dt * c_eps * sqrttke[2:-2, 2:-2, :]
    c_tri[:, :, :-1] = -delta[:, :, :-1] / dzw[None, None, :-1]
    d_tri[...] = tke[2:-2, 2:-2, :, tau] + dt * forc[2:-2, 2:-2, :]
    sol, water_mask = solve_implicit(ks, a_tri, b_tri, c_tri, d_tri, b_edge=b_edge)
    tke[2:-2, 2:-2, :, taup1] = torch.where(water_mask, sol, tke[2:-2, 2:-2, :, taup1])
    surf = torch.zeros(kappa.shape[:2], device=kappa.device)
    mask = tke[2:-2, 2:-2, -1, taup1] < 0.0
    surf[2:-2, 2:-2] = torch.where(mask, -tke[2:-2, 2:-2, -1, taup1] * 0.5 * dzw[-1] / dt, 0.0)
    tke[2:-2, 2:-2, -1, taup1] = torch.maximum(torch.tensor([0.0], device=tke.device), tke[2:-2, 2:-2, -1, taup1])
    return tke, surf

def advect_z(flux, vel, var, mask, dz, dt_tracer: float):
    vel, var, mask = [pad_z_edges(a) for a in (vel, var, mask)]
    dz = dz[None, None, :-1]
    flux[...] = 0.0
    uCFL = torch.abs(vel[2:-2, 2:-2, 1:-2] * dt_tracer / dz)
    rjp = (var[2:-2, 2:-2, 3:] - var[2:-2, 2:-2, 2:-1]) * mask[2:-2, 2:-2, 2:-1]
    rj = (var[2:-2, 2:-2, 2:-1] - var[2:-2, 2:-2, 1:-2]) * mask[2:-2, 2:-2, 1:-2]
    rjm = (var[2:-2, 2:-2, 1:-2] - var[2:-2, 2:-2, :-3]) * mask[2:-2, 2:-2, :-3]
    cr = limiter(calc_cr(rjp, rj, rjm, vel[2:-2, 2:-2, 1:-2]))
    flux[2:-2, 2:-2, :-1] = vel[2:-2, 2:-2, 1:-2] * (var[2:-2, 2:-2, 2:-1] + var[2:-2, 2:-2, 1:-2]) * 0.5 - \
        torch.abs(vel[2:-2, 2:-2, 1:-2]) * ((1.0 - cr) + uCFL * cr) * rj * 0.5
    return flux

def gsw_dHdT(sa, ct, p):
    v01 = 9.998420897506056e2; v02 = 2.839940833161907e0; v03 = -3.147759265588511e-2
    v04 = 1.181805545074306e-3; v05 = -6.698001071123802e0; v06 = -2.986498947203215e-2
    v07 = 2.327859407479162e-4; v08 = -3.988822378968490e-2; v09 = 5.095422573880500e-4
    v10 = -1.426984671633621e-5; v11 = 1.645039373682922e-7
    x2 = 0.0248826675584615 * sa
    x = torch.sqrt(x2)
    y = ct * 0.025
    z = p * 1e-4
    t1 = v01 + ct * (v02 + ct * (v03 + v04 * ct))
    t2 = sa * (v05 + ct * (v06 + v07 * ct) + x * (v08 + ct * (v09 + ct * (v10 + v11 * ct))))
    t3 = z * (1.0 + y * (0.5 - 2 * y)) ** 2
    return (t1 + t2) * t3 / (1 + z * y ** 2)

def run_infer(name, fn, make_args):
    want = fn(*make_args())
    tracejit.reset()
    ex = tracejit.explain(fn)(*make_args())
    got = tracejit.compile(fn)(*make_args())
    flat = lambda o: [t for t in (o if isinstance(o, (tuple, list)) else [o]) if isinstance(t, torch.Tensor)]
    ok = all(torch.allclose(a, b, atol=1e-5, rtol=1e-5) for a, b in zip(flat(got), flat(want)))
    print(f"RESULT {name} infer graphs={ex.graph_count} breaks={ex.graph_break_count} match={ok}")
    for r in ex.break_reasons: print(f"  REASON {name} infer: {r.reason[:150]} @{r.filename.split('/')[-1]}:{r.lineno}")

torch.manual_seed(0)
X, Y, Z = 8, 8, 6
kbot = torch.randint(0, Z, (X, Y))
kappa = torch.rand(X, Y, Z, dtype=torch.float64)
dzt = torch.rand(Z, dtype=torch.float64) + 0.5; dzw = torch.rand(Z, dtype=torch.float64) + 0.5
tke0 = torch.randn(X, Y, Z, 3, dtype=torch.float64); forc = torch.randn(X, Y, Z, dtype=torch.float64)
def mixing(kbot, kappa, dzt, dzw, tke, forc):
    with torch.no_grad():
        return vertical_mixing(kbot, kappa, dzt, dzw, tke, forc)
run_infer("ocean_tke_mixing", mixing, lambda: (kbot, kappa, dzt, dzw, tke0.clone(), forc))
vel = torch.randn(X, Y, Z, dtype=torch.float64); var = torch.randn(X, Y, Z, dtype=torch.float64)
maskW = (torch.rand(X, Y, Z) > 0.2).double()
run_infer("ocean_advect", advect_z, lambda: (torch.empty(X, Y, Z, dtype=torch.float64), vel, var, maskW, dzw, 1.0))
sa = torch.rand(X, Y, Z, dtype=torch.float64) * 35; ct = torch.rand(X, Y, Z, dtype=torch.float64) * 20
p = torch.rand(X, Y, Z, dtype=torch.float64) * 1000
run_infer("ocean_eos", gsw_dHdT, lambda: (sa, ct, p))
