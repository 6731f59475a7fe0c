"""A depth image of a torus: one ray per pixel through a tack.Mesh, checked against brute force.

    python docs/examples/raycast.py [--width 320] [--height 240] [--device cpu] [--output-dir .]

The torus is triangulated in NumPy (a grid of (u, v) angles, two triangles a cell), tilted so the
hole shows, and made a tack.Mesh: a BVH over its triangles, built on the device.  One kernel casts
a ray from a pinhole camera through every pixel and asks the mesh for the nearest hit,

    tri, t, u, v = mesh.ray_closest(eye, direction)     # tri = -1 for a miss

writing the hit's distance along the ray into a depth image (NaN where the ray misses).  The
check: for every 5th pixel, the nearest hit from Moller-Trumbore over every triangle in NumPy
(the same triangle, the same t to rounding), and the hits against the torus's own equation.
With VTK installed the depth image is written as raycast.png (tack.vis) and raycast.vti.
"""

import argparse
import math
import os
import time

import numpy as np

import tack

R, RT = 1.0, 0.4           # the torus's radii: centre of the tube, and the tube
EYE = (0.0, -3.2, 1.6)     # the camera, looking at the origin
FOV = 50.0                 # vertical field of view, degrees


def torus(nu=96, nv=48):
    """Vertices (f64) and triangles (int32) of the torus, tilted 30 degrees about x."""
    u = np.linspace(0, 2 * np.pi, nu, endpoint=False)
    v = np.linspace(0, 2 * np.pi, nv, endpoint=False)
    uu, vv = np.meshgrid(u, v, indexing="ij")
    pts = np.stack([(R + RT * np.cos(vv)) * np.cos(uu), (R + RT * np.cos(vv)) * np.sin(uu),
                    RT * np.sin(vv)], -1).reshape(-1, 3)
    a = math.radians(30.0)
    rot = np.array([[1, 0, 0], [0, math.cos(a), -math.sin(a)], [0, math.sin(a), math.cos(a)]])
    pts = pts @ rot.T
    i, j = np.meshgrid(np.arange(nu), np.arange(nv), indexing="ij")
    p00, p10 = i * nv + j, ((i + 1) % nu) * nv + j
    p01, p11 = i * nv + (j + 1) % nv, ((i + 1) % nu) * nv + (j + 1) % nv
    tris = np.concatenate([np.stack([p00, p10, p11], -1).reshape(-1, 3),
                           np.stack([p00, p11, p01], -1).reshape(-1, 3)]).astype(np.int32)
    return pts, tris, rot


def camera(width, height):
    """The eye and the unit vectors of the camera: forward, right, up (f64)."""
    eye = np.array(EYE)
    fwd = -eye / np.linalg.norm(eye)
    right = np.cross(fwd, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, fwd)
    scale = math.tan(math.radians(FOV) / 2) / (height / 2)
    return eye, fwd, right * scale, up * scale


@tack.kernel
def cast(mesh, eye, fwd, right, up, depth, hit):
    for y, x in tack.ndrange(depth.shape[0], depth.shape[1]):
        cx = x + 0.5 - depth.shape[1] * 0.5
        cy = depth.shape[0] * 0.5 - (y + 0.5)      # row 0 at the top
        d = tack.vec3d(fwd[0] + cx * right[0] + cy * up[0], fwd[1] + cx * right[1] + cy * up[1],
                       fwd[2] + cx * right[2] + cy * up[2])
        d = d / tack.length(d)
        tri, t, u, v = mesh.ray_closest((eye[0], eye[1], eye[2]), d)
        hit[y, x] = tri
        depth[y, x] = t if tri >= 0 else math.nan


def ray_directions(width, height, eye, fwd, right, up):
    ys, xs = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")
    cx = xs + 0.5 - width * 0.5
    cy = height * 0.5 - (ys + 0.5)
    d = fwd + cx[..., None] * right + cy[..., None] * up
    return d / np.linalg.norm(d, axis=-1, keepdims=True)


def nearest_hit(v, tris, o, d):
    """Moller-Trumbore against every triangle: (triangle, t) of the nearest hit, (-1, inf) for none."""
    a, b, c = v[tris[:, 0]], v[tris[:, 1]], v[tris[:, 2]]
    e1, e2 = b - a, c - a
    p = np.cross(d, e2)
    det = (e1 * p).sum(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / det
        s = o - a
        u = (s * p).sum(1) * inv
        q = np.cross(s, e1)
        w = (d * q).sum(1) * inv
        t = (e2 * q).sum(1) * inv
    ok = (det != 0) & (u >= 0) & (u <= 1) & (w >= 0) & (u + w <= 1) & (t > 0)
    if not ok.any():
        return -1, np.inf
    k = np.flatnonzero(ok)[np.argmin(t[ok])]
    return int(k), float(t[k])


def write_images(depth, outdir):
    try:
        import tack.vis
        from tack.interop.vtk import array_to_vtk
        from vtkmodules.vtkCommonDataModel import vtkImageData
        from vtkmodules.vtkIOXML import vtkXMLImageDataWriter
    except ImportError:
        print("VTK is not installed: no raycast.png or raycast.vti written")
        return
    h, w = depth.shape
    shown = np.where(np.isnan(depth), np.nanmax(depth), depth)     # misses at the far end of the scale
    png = tack.vis.render_slice(shown, os.path.join(outdir, "raycast.png"),
                                title="depth along the ray", colormap="magma")
    img = vtkImageData()
    img.SetDimensions(w, h, 1)
    arr = array_to_vtk(tack.array(depth[::-1].reshape(-1)), name="depth", copy=True)  # VTK's y grows upwards
    img.GetPointData().SetScalars(arr)
    writer = vtkXMLImageDataWriter()
    writer.SetFileName(os.path.join(outdir, "raycast.vti"))
    writer.SetInputData(img)
    if not writer.Write():
        raise RuntimeError("vtkXMLImageDataWriter could not write raycast.vti")
    print(f"wrote {png} and {os.path.join(outdir, 'raycast.vti')}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--width", type=int, default=320)
    ap.add_argument("--height", type=int, default=240)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--output-dir", default=".")
    args = ap.parse_args()
    w, h, dev = args.width, args.height, args.device

    v, tris, rot = torus()
    t0 = time.perf_counter()
    mesh = tack.Mesh(tack.array(v, device=dev), tack.array(tris, device=dev))
    t1 = time.perf_counter()
    eye, fwd, right, up = camera(w, h)
    depth = tack.zeros((h, w), np.float64, device=dev)
    hit = tack.zeros((h, w), np.int64, device=dev)
    args_ = [tack.array(x, device=dev) for x in (eye, fwd, right, up)]
    cast(mesh, *args_, depth, hit)          # compiles on the first call
    tack.synchronize()
    t2 = time.perf_counter()
    cast(mesh, *args_, depth, hit)
    tack.synchronize()
    t3 = time.perf_counter()
    depth, hit = depth.numpy(), hit.numpy()
    print(f"{len(tris)} triangles, BVH depth {mesh.depth}: built in {(t1 - t0) * 1e3:.1f} ms (with its "
          f"first compiles); {w} x {h} rays in {(t3 - t2) * 1e3:.1f} ms, {(hit >= 0).mean():.0%} hit")

    # every 5th pixel against brute force
    dirs = ray_directions(w, h, eye, fwd, right, up)
    for y in range(0, h, 5):
        for x in range(0, w, 5):
            k, t = nearest_hit(v, tris, eye, dirs[y, x])
            assert hit[y, x] == k, (y, x, hit[y, x], k)
            assert (k < 0 and np.isnan(depth[y, x])) or abs(depth[y, x] - t) <= 1e-9 * t, (y, x)
    # the hits lie on the torus (to the triangulation's error): back in the torus's frame,
    # (sqrt(x^2 + y^2) - R)^2 + z^2 = RT^2
    p = (eye + depth[hit >= 0][:, None] * dirs[hit >= 0]) @ rot
    tube = np.sqrt((np.hypot(p[:, 0], p[:, 1]) - R) ** 2 + p[:, 2] ** 2)
    assert np.abs(tube - RT).max() < 0.01 * RT, np.abs(tube - RT).max()
    assert 0.2 < (hit >= 0).mean() < 0.8
    write_images(depth, args.output_dir)
    print("all checks passed")


if __name__ == "__main__":
    main()
