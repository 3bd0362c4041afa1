// gsplat's distributed rasterization pre-pass: every rank all-gathers the cameras, projects
// its Gaussians into all of them (fp32, gsplat's torch EWA path), packs the visible
// (camera, Gaussian) pairs by camera owner and all-to-alls them there.
// Origin: ParallelKernelBench 61_gsplat_3d_gaussian_splatting.
// Deviations: random cameras per rank; scales that span tiles; fp32 projection with inputs
// drawn so that every selection and integer radius is robust to fp32 rounding; Gaussian
// ids offset by the source rank (the original offset them by the destination's); ids int32
// (the original's came out int64).
#include <ATen/ATen.h>

#include <cmath>
#include <stdexcept>

#include "pkb/reference.hpp"

namespace {

struct Projection {
  at::Tensor radii;    // (C, n, 2) float, 0 where not visible
  at::Tensor means2d;  // (C, n, 2)
  at::Tensor depths;   // (C, n)
  at::Tensor conics;   // (C, n, 3)
  at::Tensor fragile;  // (n,) bool: some decision within its margin (only when asked)
};

at::Tensor quat_to_rotmat(const at::Tensor& quats) {
  at::Tensor q = quats / quats.norm(2, -1, true).clamp_min(1e-12);
  at::Tensor w = q.select(-1, 0), x = q.select(-1, 1), y = q.select(-1, 2), z = q.select(-1, 3);
  at::Tensor r = at::stack({1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
                            2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                            2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)},
                           -1);
  return r.view({quats.size(0), 3, 3});
}

// Projects n Gaussians into C cameras in the dtype of the arguments (fp32 for the answer,
// fp64 for judging margins).
Projection project(const at::Tensor& means, const at::Tensor& quats, const at::Tensor& scales,
                   const at::Tensor& viewmats, const at::Tensor& ks, double width, double height, double eps2d,
                   double near_plane, double far_plane, bool margins) {
  at::Tensor rot = quat_to_rotmat(quats);
  at::Tensor m = rot * scales.unsqueeze(-2);                       // R diag(s)
  // The 3x3 and 2x3 products per Gaussian as broadcast sums: batched matmuls of millions of
  // tiny matrices are far slower on CUDA than the elementwise passes.
  at::Tensor cov = (m.unsqueeze(-2) * m.unsqueeze(-3)).sum(-1);    // (n, 3, 3): M M^T
  at::Tensor rc = viewmats.narrow(-2, 0, 3).narrow(-1, 0, 3);      // (C, 3, 3)
  at::Tensor tc = viewmats.narrow(-2, 0, 3).select(-1, 3);         // (C, 3)
  at::Tensor mc = at::einsum("cij,nj->cni", {rc, means}) + tc.unsqueeze(1);          // (C, n, 3)
  at::Tensor covc = at::einsum("cij,njk,clk->cnil", {rc, cov, rc});                 // (C, n, 3, 3)
  at::Tensor tx = mc.select(-1, 0), ty = mc.select(-1, 1), tz = mc.select(-1, 2);
  auto kv = [&](int i, int j) { return ks.select(-2, i).select(-1, j).unsqueeze(1); };  // (C, 1)
  at::Tensor fx = kv(0, 0), fy = kv(1, 1), cx = kv(0, 2), cy = kv(1, 2);
  at::Tensor tan_x = 0.5 * width / fx, tan_y = 0.5 * height / fy;
  at::Tensor lim_xp = (width - cx) / fx + 0.3 * tan_x, lim_xn = cx / fx + 0.3 * tan_x;
  at::Tensor lim_yp = (height - cy) / fy + 0.3 * tan_y, lim_yn = cy / fy + 0.3 * tan_y;
  at::Tensor txc = tz * at::max(at::min(tx / tz, lim_xp), -lim_xn);
  at::Tensor tyc = tz * at::max(at::min(ty / tz, lim_yp), -lim_yn);
  at::Tensor zero = at::zeros_like(tz), tz2 = tz * tz;
  at::Tensor jac = at::stack({fx / tz, zero, -fx * txc / tz2, zero, fy / tz, -fy * tyc / tz2}, -1)
                       .view({tz.size(0), tz.size(1), 2, 3});
  at::Tensor jcov = (jac.unsqueeze(-1) * covc.unsqueeze(-3)).sum(-2);                // (C, n, 2, 3): J cov
  at::Tensor cov2d = (jcov.unsqueeze(-2) * jac.unsqueeze(-3)).sum(-1);                // (C, n, 2, 2): J cov J^T
  at::Tensor kk = ks.narrow(-2, 0, 2);                                              // (C, 2, 3)
  at::Tensor means2d = at::einsum("cij,cnj->cni", {kk, mc}) / tz.unsqueeze(-1);
  at::Tensor a = cov2d.select(-1, 0).select(-1, 0) + eps2d, d = cov2d.select(-1, 1).select(-1, 1) + eps2d;
  at::Tensor b = cov2d.select(-1, 0).select(-1, 1), c = cov2d.select(-1, 1).select(-1, 0);
  at::Tensor det = (a * d - b * c).clamp_min(1e-10);
  at::Tensor conics = at::stack({d / det, -(b + c) / 2.0 / det, a / det}, -1);
  at::Tensor arg_x = 3.33 * a.sqrt(), arg_y = 3.33 * d.sqrt();
  at::Tensor rx = arg_x.ceil(), ry = arg_y.ceil();
  at::Tensor valid = (tz > near_plane) & (tz < far_plane);
  at::Tensor mx = means2d.select(-1, 0), my = means2d.select(-1, 1);
  at::Tensor inside = (mx + rx > 0) & (mx - rx < width) & (my + ry > 0) & (my - ry < height);
  at::Tensor keep = valid & inside;
  Projection p;
  p.radii = at::stack({rx, ry}, -1) * keep.unsqueeze(-1);
  p.means2d = means2d;
  p.depths = tz;
  p.conics = conics;
  if (margins) {
    auto off_int = [](const at::Tensor& v) { return (v - v.round()).abs() < 1e-3 + 1e-5 * v.abs(); };
    auto near_edge = [](const at::Tensor& v, const at::Tensor& scale) { return v.abs() < 1e-2 + 1e-5 * scale; };
    at::Tensor sx = mx.abs() + rx + width, sy = my.abs() + ry + height;
    at::Tensor bad = (tz - near_plane).abs() < 1e-3;
    at::Tensor ok_depth = valid;
    bad = bad | (ok_depth & (off_int(arg_x) | off_int(arg_y)));
    bad = bad | (ok_depth & (near_edge(mx + rx, sx) | near_edge(mx - rx - width, sx) | near_edge(my + ry, sy) |
                             near_edge(my - ry - height, sy)));
    p.fragile = bad.any(0);
  }
  return p;
}

struct GsplatProjection : pkb::Reference {
  // All W*Cl cameras of the trial, from the shared stream: (viewmats, Ks) in fp32.
  std::pair<at::Tensor, at::Tensor> cameras(pkb::Ctx& ctx) {
    int64_t c = ctx.world() * ctx.size("Cl");
    double iw = double(ctx.size("IW")), ih = double(ctx.size("IH"));
    at::TensorOptions f32 = ctx.options(at::kFloat);
    at::Generator& gen = ctx.shared_rng();
    // yaw and pitch in [-0.6, 0.6], roll in [-0.3, 0.3]
    at::Tensor ang = (at::rand({c, 3}, gen, f32) - 0.5) * at::tensor({1.2, 1.2, 0.6}, f32);
    at::Tensor pos = at::rand({c, 3}, gen, f32) - 0.5;          // camera centre
    at::Tensor focal = 0.8 * std::min(iw, ih) * (0.8 + 0.4 * at::rand({c}, gen, f32));
    at::Tensor cy = ang.select(1, 0).cos(), sy = ang.select(1, 0).sin();
    at::Tensor cp = ang.select(1, 1).cos(), sp = ang.select(1, 1).sin();
    at::Tensor cr = ang.select(1, 2).cos(), sr = ang.select(1, 2).sin();
    at::Tensor o = at::zeros_like(cy), l = at::ones_like(cy);
    at::Tensor ry = at::stack({cy, o, sy, o, l, o, -sy, o, cy}, 1).view({c, 3, 3});
    at::Tensor rx = at::stack({l, o, o, o, cp, -sp, o, sp, cp}, 1).view({c, 3, 3});
    at::Tensor rz = at::stack({cr, -sr, o, sr, cr, o, o, o, l}, 1).view({c, 3, 3});
    at::Tensor rot = at::matmul(rz, at::matmul(rx, ry));  // world -> camera
    at::Tensor view = at::zeros({c, 4, 4}, f32);
    view.narrow(1, 0, 3).narrow(2, 0, 3).copy_(rot);
    view.narrow(1, 0, 3).select(2, 3).copy_(-at::matmul(rot, pos.unsqueeze(-1)).squeeze(-1));
    view.select(1, 3).select(1, 3).fill_(1.0);
    at::Tensor k = at::zeros({c, 3, 3}, f32);
    k.select(1, 0).select(1, 0).copy_(focal);
    k.select(1, 1).select(1, 1).copy_(focal);
    k.select(1, 0).select(1, 2).fill_(iw * 0.5);
    k.select(1, 1).select(1, 2).fill_(ih * 0.5);
    k.select(1, 2).select(1, 2).fill_(1.0);
    return {view, k};
  }

  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    int64_t n = ctx.size("n"), cl = ctx.size("Cl");
    at::ScalarType dt = ctx.dtype();
    auto [view, k] = cameras(ctx);
    view = view.to(dt);
    k = k.to(dt);
    in["viewmats"] = view.narrow(0, ctx.rank() * cl, cl).contiguous();
    in["Ks"] = k.narrow(0, ctx.rank() * cl, cl).contiguous();
    at::TensorOptions f32 = ctx.options(at::kFloat);
    at::Generator& gen = ctx.rng();
    auto draw_means = [&](int64_t m) {
      at::Tensor u = at::rand({m, 3}, gen, f32);
      return at::stack({(u.select(1, 0) - 0.5) * 1.5, (u.select(1, 1) - 0.5) * 1.5, u.select(1, 2) * 2 + 2}, 1);
    };
    auto draw_scales = [&](int64_t m) {
      return at::exp(std::log(0.005) + at::rand({m, 3}, gen, f32) * (std::log(0.1) - std::log(0.005)));
    };
    at::Tensor means = draw_means(n).to(dt), scales = draw_scales(n).to(dt), quats = in["quats"].clone();
    double iw = double(ctx.size("IW")), ih = double(ctx.size("IH"));
    at::Tensor v64 = view.to(at::kDouble), k64 = k.to(at::kDouble);
    for (int attempt = 0;; ++attempt) {
      Projection p = project(means.to(at::kDouble), quats.to(at::kDouble), scales.to(at::kDouble), v64, k64, iw, ih,
                             ctx.arg_float("eps2d"), ctx.arg_float("near_plane"), ctx.arg_float("far_plane"), true);
      at::Tensor bad = p.fragile.nonzero().squeeze(-1);
      if (bad.numel() == 0) break;
      if (attempt == 200) throw std::runtime_error("misc_gsplat_projection_all2all: Gaussians stay fragile");
      int64_t m = bad.numel();
      means.index_copy_(0, bad, draw_means(m).to(dt));
      scales.index_copy_(0, bad, draw_scales(m).to(dt));
      quats.index_copy_(0, bad, at::randn({m, 4}, gen, f32).to(dt));
    }
    in["means"] = means;
    in["scales"] = scales;
    in["quats"] = quats;
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    auto& comm = ctx.comm();
    int64_t w = ctx.world(), r = ctx.rank(), n = ctx.size("n"), cl = ctx.size("Cl");
    at::ScalarType dt = in["means"].scalar_type();
    at::Tensor view = comm.all_gather(in["viewmats"]).to(at::kFloat);  // (W*Cl, 4, 4)
    at::Tensor ks = comm.all_gather(in["Ks"]).to(at::kFloat);
    Projection p = project(in["means"].to(at::kFloat), in["quats"].to(at::kFloat), in["scales"].to(at::kFloat), view, ks,
                           double(ctx.size("IW")), double(ctx.size("IH")), ctx.arg_float("eps2d"),
                           ctx.arg_float("near_plane"), ctx.arg_float("far_plane"), false);
    // Visible pairs, camera-major then by Gaussian (so grouped by destination rank).
    at::Tensor vis = (p.radii > 0).all(-1);                 // (C, n)
    at::Tensor pairs = vis.nonzero();                       // (P, 2): camera, Gaussian
    at::Tensor cam = pairs.select(1, 0), gid = pairs.select(1, 1);
    at::Tensor flat = cam * n + gid;
    auto pick = [&](const at::Tensor& t, int64_t width) { return t.reshape({-1, width}).index_select(0, flat); };
    at::Tensor radii = pick(p.radii, 2).to(at::kInt);
    at::Tensor attrs = at::cat({pick(p.means2d, 2), pick(p.depths, 1), pick(p.conics, 3)}, 1).to(dt);
    attrs = at::cat({attrs, in["opacities"].index_select(0, gid).unsqueeze(1), in["colors"].index_select(0, gid)}, 1);
    at::Tensor dest = at::div(cam, cl, "floor");
    at::Tensor ids = at::stack({cam - dest * cl, gid + r * n}, 1).to(at::kInt);  // local camera, global Gaussian
    at::Tensor cnt = at::bincount(dest, {}, w).cpu();
    std::vector<int64_t> send(cnt.data_ptr<int64_t>(), cnt.data_ptr<int64_t>() + w);
    at::Tensor s = at::tensor(send, at::kLong).to(ctx.device()), rc = at::zeros_like(s);
    comm.all_to_all(rc, s);
    at::Tensor rcc = rc.cpu();
    std::vector<int64_t> recv(rcc.data_ptr<int64_t>(), rcc.data_ptr<int64_t>() + w);
    int64_t total = 0;
    for (int64_t x : recv) total += x;
    auto move = [&](const at::Tensor& t) {
      at::Tensor res = at::zeros({total, t.size(1)}, t.options());
      comm.all_to_all(res, t.contiguous(), recv, send);
      return res;
    };
    for (size_t i = 0; i < out.size(); ++i) out.set_size(i, 0, total);
    auto rows = [&](const char* name) { return out[name].narrow(0, 0, total); };
    at::Tensor got_radii = rows("radii");
    comm.all_to_all(got_radii, radii.contiguous(), recv, send);
    // ids and attributes travel packed: their columns unpacked into the outputs.
    at::Tensor got_attrs = move(attrs), got_ids = move(ids);
    rows("camera_ids").copy_(got_ids.select(1, 0));
    rows("gaussian_ids").copy_(got_ids.select(1, 1));
    rows("means2d").copy_(got_attrs.narrow(1, 0, 2));
    rows("depths").copy_(got_attrs.select(1, 2));
    rows("conics").copy_(got_attrs.narrow(1, 3, 3));
    rows("opacities_out").copy_(got_attrs.select(1, 6));
    rows("colors_out").copy_(got_attrs.narrow(1, 7, 3));
  }
};

}  // namespace

PKB_REFERENCE("misc_gsplat_projection_all2all", GsplatProjection);
