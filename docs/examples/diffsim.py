"""Differentiable simulation: the launch velocity that makes a projectile hit a target.

A projectile with quadratic air drag is simulated for 100 steps by a Tack kernel; a second kernel
measures how far from the target it ends. tack.Tape records the 101 launches, tape.backward gives
the gradient of the miss with respect to the launch velocity, and plain gradient descent moves
the velocity until the projectile lands on the target (docs/differentiation.md).

    python docs/examples/diffsim.py [--device cpu] [--iterations 100] [--output trajectory.png]

It prints the miss every few iterations and checks that it converged (under 1e-8 m^2 within
the iterations documented in docs/differentiation.md); with VTK installed, --output draws the
first and last trajectories through tack.vis.
"""

import argparse

import numpy as np

import tack

STEPS = 100
DT = 0.02
DRAG = 0.05
TARGET = (10.0, 2.0)


@tack.kernel
def step(p, v, dt, drag, pn, vn):
    """One explicit step of a projectile under gravity and quadratic drag."""
    for i in range(p.shape[0]):
        vx = v[i, 0]
        vy = v[i, 1]
        speed = tack.sqrt(vx * vx + vy * vy)
        nvx = vx - dt * drag * speed * vx
        nvy = vy - dt * (9.81 + drag * speed * vy)
        vn[i, 0] = nvx
        vn[i, 1] = nvy
        pn[i, 0] = p[i, 0] + dt * nvx
        pn[i, 1] = p[i, 1] + dt * nvy


@tack.kernel
def miss(p, target, loss):
    """The squared distance from the target, summed over the projectiles."""
    for i in range(p.shape[0]):
        dx = p[i, 0] - target[0]
        dy = p[i, 1] - target[1]
        loss[0] += dx * dx + dy * dy


def simulate(v0, target, record=None):
    """The miss of the 100 steps from v0 (1, 2), on a new tape; the tape and the loss."""
    p = tack.zeros((1, 2), tack.f64)
    v = v0
    loss = tack.zeros(1, tack.f64)
    with tack.Tape() as tape:
        for _ in range(STEPS):
            pn, vn = tack.zeros((1, 2), tack.f64), tack.zeros((1, 2), tack.f64)  # each step its own arrays
            step(p, v, DT, DRAG, pn, vn)
            if record is not None:
                record.append(pn.numpy()[0])
            p, v = pn, vn
        miss(p, target, loss)
    return tape, loss


def optimize(iterations=100, rate=0.16):
    v0 = tack.array([[3.0, 5.0]], tack.f64, requires_grad=True)
    target = tack.array(TARGET, tack.f64)
    history = []
    for it in range(iterations):
        tape, loss = simulate(v0, target)
        history.append(float(loss.numpy()[0]))
        if history[-1] < 1e-8:
            break
        tape.backward(loss)
        v0 = tack.array(v0.numpy() - rate * v0.grad.numpy(), tack.f64, requires_grad=True)
    return v0, history


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", help="draw the first and the last trajectory to this PNG (needs VTK)")
    parser.add_argument("--device", default="cpu", help="where the arrays live and the kernels run")
    parser.add_argument("--iterations", type=int, default=100, help="the most gradient steps to take")
    args = parser.parse_args()
    tack.set_default_device(args.device)
    v0, history = optimize(args.iterations)
    for it in range(0, len(history), 10):
        print(f"iteration {it:3d}: miss {history[it]:.3e} m^2")
    print(f"converged in {len(history) - 1} iterations: launch velocity {v0.numpy()[0].round(4)} m/s, "
          f"miss {history[-1]:.1e} m^2")
    assert history[-1] < 1e-8, history[-1]
    assert len(history) - 1 <= 40, len(history)  # 31 on x86-64 (docs/differentiation.md)
    if args.output:
        try:
            from tack import vis
        except ImportError:
            print("VTK is not installed: no picture")
        else:
            first, last = [], []
            simulate(tack.array([[3.0, 5.0]], tack.f64), tack.array(TARGET, tack.f64), first)
            simulate(v0, tack.array(TARGET, tack.f64), last)
            pts = np.array(first + last + [TARGET])
            pts3 = np.column_stack([pts, np.zeros(len(pts))])
            values = np.concatenate([np.zeros(len(first)), np.ones(len(last)), [2.0]])
            vis.render_points(pts3, args.output, values=values, view="z", title="first and last trajectory")
            print(f"wrote {args.output}")
    print("diffsim: all checks passed")


if __name__ == "__main__":
    main()
