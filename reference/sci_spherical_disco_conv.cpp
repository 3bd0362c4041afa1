// torch-harmonics' distributed DISCO convolution over a polar x azimuth grid: an azimuth
// all-to-all (channels split, longitudes gathered), the sparse psi contraction on the local
// latitudes (rolled along longitude for every output longitude), a polar all-reduce of the
// partial sums, the own latitudes, the inverse azimuth all-to-all, and the channel x basis
// contraction with weight, plus bias.
// Origin: ParallelKernelBench 62_torchharmonics_spherical_convolution.
// Deviations: psi random per trial with a local support, in a dense (polar, K, nlat, E)
// index/value layout; weight and bias shared; one weighted gather-sum instead of nlon bmm
// calls.
#include <ATen/ATen.h>

#include "pkb/reference.hpp"

namespace {

struct DiscoConv : pkb::Reference {
  std::unique_ptr<pkb::Comm> azimuth, polar;

  void setup(pkb::Ctx& ctx) override {
    int r = ctx.rank(), az = int(ctx.size("az"));
    azimuth = ctx.comm().split(r / az, r % az);  // ranks p*az .. p*az + az - 1
    polar = ctx.comm().split(r % az, r / az);    // ranks a, a + az, a + 2az, ...
  }

  void make_inputs(pkb::Ctx& ctx, pkb::Inputs& in) override {
    int64_t np = ctx.size("polar"), k = ctx.size("K"), t = ctx.size("nlat"), e = ctx.size("E");
    int64_t nl = ctx.size("nlat_l"), nlon = ctx.size("nlon"), win = ctx.arg_int("lon_window");
    at::Generator& gen = ctx.shared_rng();
    at::TensorOptions i64 = ctx.options(at::kLong);
    if (e > 2 * win + 1) throw std::invalid_argument("sci_spherical_disco_conv: E exceeds the longitude window");
    // Latitude: (t - p*nl + d) mod nl, d in {-1, 0, 1}; longitude: E distinct offsets in
    // [-win, win] per row, mod nlon.
    at::Tensor p = at::arange(np, i64).view({np, 1, 1, 1});
    at::Tensor tt = at::arange(t, i64).view({1, 1, t, 1});
    at::Tensor d = at::randint(-1, 2, {np, k, t, e}, gen, i64);
    at::Tensor lat = at::remainder(tt - p * nl + d, nl);
    at::Tensor keys = at::rand({np, k, t, 2 * win + 1}, gen, ctx.options(at::kFloat));
    at::Tensor offs = std::get<1>(keys.sort(-1)).narrow(-1, 0, e) - win;
    at::Tensor lon = at::remainder(offs, nlon);
    in["psi_idx"] = (lat * nlon + lon).contiguous();
    in["psi_val"] = at::randn({np, k, t, e}, gen, ctx.options(at::kFloat)).mul_(ctx.arg_float("psi_scale"));
  }

  void run(pkb::Ctx& ctx, const pkb::Inputs& in, pkb::Outputs& out) override {
    const at::Tensor& x = in["x"];
    int64_t az = ctx.size("az"), b = x.size(0), c = x.size(1), nl = x.size(2), nlon_l = x.size(3);
    int64_t nlon = nlon_l * az, cl = c / az, k = in["psi_idx"].size(1), t = in["psi_idx"].size(2);
    int64_t e = in["psi_idx"].size(3), pr = ctx.rank() / az;

    // Azimuth transpose: channels split, longitudes gathered -> (B, Cl, nl, nlon).
    at::Tensor send = x.permute({1, 0, 2, 3}).contiguous();  // (C, B, nl, nlon_l)
    at::Tensor recv = at::empty_like(send);
    azimuth->all_to_all(recv, send);
    at::Tensor xl = recv.view({az, cl, b, nl, nlon_l}).permute({2, 1, 3, 0, 4}).reshape({b * cl, nl, nlon});

    // y[n, k, t, q] = sum_e val[k, t, e] * x[n, lat_e, (lon_e + q) mod nlon], through x
    // doubled along longitude so every (lat, lon) start reads nlon consecutive values: one
    // weighted gather-sum (embedding_bag, sum mode) over the grid's positions as rows, every
    // (k, t, q) a bag of its E taps added in order, not K x E passes over the feature map.
    at::Tensor xd = at::cat({xl, xl}, -1).reshape({b * cl, nl * 2 * nlon});
    at::Tensor idx = in["psi_idx"][pr], val = in["psi_val"][pr];  // (K, T, E)
    at::Tensor start = at::div(idx, nlon, "floor") * (2 * nlon) + at::remainder(idx, nlon);
    at::Tensor q = at::arange(nlon, idx.options());
    at::Tensor taps = (start.unsqueeze(2) + q.view({1, 1, nlon, 1})).reshape({-1});  // (K, T, nlon, E)
    at::Tensor weights = val.unsqueeze(2).expand({k, t, nlon, e}).reshape({-1});
    at::Tensor bags = at::arange(0, taps.numel(), e, taps.options());
    at::Tensor sums = std::get<0>(at::embedding_bag(xd.t().contiguous(), taps, bags, /*scale_grad_by_freq=*/false,
                                                    /*mode=sum*/ 0, /*sparse=*/false, weights));  // (K*T*nlon, B*Cl)
    at::Tensor y = sums.t().contiguous().view({b * cl, k, t, nlon});

    // Partial sums over the polar group; keep the own latitudes.
    polar->all_reduce(y);
    at::Tensor mine = y.narrow(2, pr * nl, nl);  // (B*Cl, K, nl, nlon)

    // Inverse azimuth transpose: longitudes split, channels gathered -> (B, C, K, nl, nlon_l).
    at::Tensor s2 = mine.reshape({b, cl, k, nl, az, nlon_l}).permute({4, 0, 1, 2, 3, 5}).contiguous();
    at::Tensor r2 = at::empty_like(s2);
    azimuth->all_to_all(r2, s2);
    at::Tensor full = r2.permute({1, 0, 2, 3, 4, 5}).reshape({b, c, k, nl, nlon_l});

    at::Tensor res = at::einsum("bckxy,ock->boxy", {full, in["weight"]});
    at::add_out(out["out"], res, in["bias"].view({1, -1, 1, 1}));
  }
};

}  // namespace

PKB_REFERENCE("sci_spherical_disco_conv", DiscoConv);
