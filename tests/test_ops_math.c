// The math ops against PyTorch 1.13: the elementwise rows sin ... elu, clamp / clip, softplus,
// logsumexp, std and vector_norm, forward values and gradients (for a gradient of ones) in
// f64 and f32, on contiguous and strided inputs, at NaN, +-inf, signed zeros and the clamp
// bounds; and the aborts. Finite-difference gradients are in gc_ops_math.c.
#include <signal.h>

#include "test_util.h"

// ---- PyTorch's values: printed by /usr/bin/python3 tests/reference/math_values.py ----

static const double X[] = {-2.5, -1.5, -0.5, -0.0, 0.0, 0.5, 1.5, 2.5, 0.3, -0.7, 1.0, -1.0, NAN,
    INFINITY, -INFINITY};
static const double sin_y[] = {-0.5984721441039564, -0.9974949866040544, -0.479425538604203, -0.0,
    0.0, 0.479425538604203, 0.9974949866040544, 0.5984721441039564, 0.29552020666133955,
    -0.644217687237691, 0.8414709848078965, -0.8414709848078965, NAN, NAN, NAN};
static const double sin_dx[] = {-0.8011436155469337, 0.0707372016677029, 0.8775825618903728, 1.0,
    1.0, 0.8775825618903728, 0.0707372016677029, -0.8011436155469337, 0.955336489125606,
    0.7648421872844885, 0.5403023058681398, 0.5403023058681398, NAN, NAN, NAN};
static const double cos_y[] = {-0.8011436155469337, 0.0707372016677029, 0.8775825618903728, 1.0,
    1.0, 0.8775825618903728, 0.0707372016677029, -0.8011436155469337, 0.955336489125606,
    0.7648421872844885, 0.5403023058681398, 0.5403023058681398, NAN, NAN, NAN};
static const double cos_dx[] = {0.5984721441039564, 0.9974949866040544, 0.479425538604203, 0.0,
    -0.0, -0.479425538604203, -0.9974949866040544, -0.5984721441039564, -0.29552020666133955,
    0.644217687237691, -0.8414709848078965, 0.8414709848078965, NAN, NAN, NAN};
static const double log1p_y[] = {NAN, NAN, -0.6931471805599453, -0.0, 0.0, 0.4054651081081644,
    0.9162907318741551, 1.252762968495368, 0.26236426446749106, -1.203972804325936,
    0.6931471805599453, -INFINITY, NAN, INFINITY, NAN};
static const double log1p_dx[] = {-0.6666666666666666, -2.0, 2.0, 1.0, 1.0, 0.6666666666666666, 0.4,
    0.2857142857142857, 0.7692307692307692, 3.333333333333333, 0.5, INFINITY, NAN, 0.0, -0.0};
static const double expm1_y[] = {-0.9179150013761012, -0.7768698398515702, -0.3934693402873666,
    -0.0, 0.0, 0.6487212707001282, 3.481689070338065, 11.182493960703473, 0.3498588075760031,
    -0.5034146962085905, 1.7182818284590453, -0.6321205588285577, NAN, INFINITY, -1.0};
static const double expm1_dx[] = {0.08208499862389884, 0.2231301601484298, 0.6065306597126334, 1.0,
    1.0, 1.6487212707001282, 4.481689070338065, 12.182493960703473, 1.3498588075760032,
    0.4965853037914095, 2.7182818284590455, 0.36787944117144233, NAN, INFINITY, 0.0};
static const double reciprocal_y[] = {-0.4, -0.6666666666666666, -2.0, -INFINITY, INFINITY, 2.0,
    0.6666666666666666, 0.4, 3.3333333333333335, -1.4285714285714286, 1.0, -1.0, NAN, 0.0, -0.0};
static const double reciprocal_dx[] = {-0.16000000000000003, -0.4444444444444444, -4.0, -INFINITY,
    -INFINITY, -4.0, -0.4444444444444444, -0.16000000000000003, -11.111111111111112,
    -2.0408163265306123, -1.0, -1.0, NAN, -0.0, -0.0};
static const double sign_y[] = {-1.0, -1.0, -1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, -1.0, 1.0, -1.0,
    0.0, 1.0, -1.0};
static const double sign_dx[] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0};
static const double floor_y[] = {-3.0, -2.0, -1.0, -0.0, 0.0, 0.0, 1.0, 2.0, 0.0, -1.0, 1.0, -1.0,
    NAN, INFINITY, -INFINITY};
static const double floor_dx[] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0};
static const double ceil_y[] = {-2.0, -1.0, -0.0, -0.0, 0.0, 1.0, 2.0, 3.0, 1.0, -0.0, 1.0, -1.0,
    NAN, INFINITY, -INFINITY};
static const double ceil_dx[] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0};
static const double round_y[] = {-2.0, -2.0, -0.0, -0.0, 0.0, 0.0, 2.0, 2.0, 0.0, -1.0, 1.0, -1.0,
    NAN, INFINITY, -INFINITY};
static const double round_dx[] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0};
static const double leaky_relu_y[] = {-0.5, -0.30000000000000004, -0.1, -0.0, 0.0, 0.5, 1.5, 2.5,
    0.3, -0.13999999999999999, 1.0, -0.2, NAN, INFINITY, -INFINITY};
static const double leaky_relu_dx[] = {0.2, 0.2, 0.2, 0.2, 0.2, 1.0, 1.0, 1.0, 1.0, 0.2, 1.0, 0.2,
    0.2, 1.0, 0.2};
static const double elu_y[] = {-1.3768725020641517, -1.1653047597773554, -0.5902040104310499, 0.0,
    0.0, 0.5, 1.5, 2.5, 0.3, -0.7551220443128857, 1.0, -0.9481808382428365, NAN, INFINITY, -1.5};
static const double elu_dx[] = {0.1231274979358482, 0.33469524022264474, 0.9097959895689501, 1.5,
    1.5, 1.0, 1.0, 1.0, 1.0, 0.7448779556871143, 1.0, 0.5518191617571635, 1.0, 1.0, 0.0};
static const double clamp_y[] = {-0.5, -0.5, -0.5, -0.0, 0.0, 0.5, 1.5, 1.5, 0.3, -0.5, 1.0, -0.5,
    NAN, 1.5, -0.5};
static const double clamp_dx[] = {0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0,
    0.0, 0.0};
static const double clamp_lo_y[] = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 1.5, 2.5, 0.5, 0.5, 1.0, 0.5, NAN,
    INFINITY, 0.5};
static const double clamp_lo_dx[] = {0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0,
    0.0, 1.0, 0.0};
static const double clamp_hi_y[] = {-2.5, -1.5, -0.5, -0.5, -0.5, -0.5, -0.5, -0.5, -0.5, -0.7,
    -0.5, -1.0, NAN, -0.5, -INFINITY};
static const double clamp_hi_dx[] = {1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0,
    0.0, 0.0, 1.0};
static const double clamp_crossed_y[] = {-1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0,
    -1.0, -1.0, NAN, -1.0, -1.0};
static const double clamp_crossed_dx[] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0};
static const double softplus_y[] = {0.07888973429254963, 0.2014132779827524, 0.4740769841801067,
    0.6931471805599453, 0.6931471805599453, 0.9740769841801067, 1.7014132779827524,
    2.5788897342925496, 0.8543552444685272, 0.4031860488854579, 1.3132616875182228,
    0.31326168751822286, NAN, INFINITY, 0.0};
static const double softplus_dx[] = {0.07585818002124356, 0.18242552380635632, 0.37754066879814546,
    0.5, 0.5, 0.6224593312018546, 0.8175744761936437, 0.9241418199787564, 0.574442516811659,
    0.33181222783183395, 0.7310585786300049, 0.2689414213699951, NAN, 1.0, 0.0};
static const double S[] = {-1000.0, -30.0, -3.0, 0.0, 1.4, 1.6, 3.0, 19.0, 21.0, 1000.0};
static const double softplus_big_y[] = {0.0, 9.357622968839737e-14, 0.04858735157374206,
    0.6931471805599453, 1.620417409918451, 1.783900740888339, 3.048587351573742, 19.000000005602796,
    21.0, 1000.0};
static const double softplus_big_dx[] = {0.0, 9.3576229688393e-14, 0.04742587317756679, 0.5,
    0.8021838885585817, 0.8320183851339245, 0.9525741268224333, 0.9999999943972036, 1.0, 1.0};
static const double softplus_b2t3_y[] = {0.0, 4.37825538134826e-27, 0.0012378425688652247,
    0.34657359027997264, 1.4295164131439857, 1.6, 3.0, 19.0, 21.0, 1000.0};
static const double softplus_b2t3_dx[] = {0.0, 8.75651076269652e-27, 0.0024726231566347748, 0.5,
    0.9426758241011313, 1.0, 1.0, 1.0, 1.0, 1.0};
static const double softplus_b05_y[] = {1.4249152813482571e-217, 6.11804547427441e-07,
    0.4028265559655048, 1.3862943611198906, 2.206372097770916, 2.3422013318955557,
    3.402826555965505, 19.000149698057257, 21.00005507214046, 1000.0};
static const double softplus_b05_dx[] = {7.124576406741286e-218, 3.059022269256247e-07,
    0.18242552380635632, 0.5, 0.6681877721681662, 0.6899744811276125, 0.8175744761936437,
    0.9999251537724894, 0.9999724643088854, 1.0};
static const double L[] = {1.0, 2.0, 3.0, -INFINITY, -INFINITY, -INFINITY, INFINITY, 1.0, 2.0,
    1000.0, 1000.5, -1000.0, -0.5, 0.25, -2.0};
static const double logsumexp_last_y[] = {3.4076059644443806, -INFINITY, INFINITY,
    1000.9740769841801, 0.7060097813072754};
static const double logsumexp_last_dx[] = {0.09003057317038043, 0.24472847105479759,
    0.6652409557748217, NAN, NAN, NAN, NAN, 0.0, 0.0, 0.3775406687981475, 0.622459331201858, 0.0,
    0.29938952887449777, 0.6338076376009726, 0.06680283352452962};
static const double R[] = {0.5, -1.25, 2.0, 0.75, 3.0, 3.0, 3.0, 3.0, -2.0, 1.0, 0.0, 4.5};
static const double logsumexp_dim0_keep_y[] = {3.08509724636431, 3.1394136357631153,
    3.349012216768186, 4.720458273985558};
static const double logsumexp_dim0_keep_dx[] = {0.07538874796299667, 0.012408002696814373,
    0.2594964603424192, 0.01886478591327724, 0.9184229667642033, 0.8698681454589866,
    0.7053845126982413, 0.178984105354632, 0.006188285272800039, 0.11772385184419897,
    0.03511902695933973, 0.8021511087320908};
static const double std_dim1_y[] = {1.3385315336840842, 0.0, 2.7195281453467866};
static const double std_dim1_dx[] = {0.0, -0.4358009644552832, 0.3735436838188142,
    0.06225728063646903, 0.0, 0.0, 0.0, 0.0, -0.35238956249563996, 0.01532128532589739,
    -0.10724899728128173, 0.4443172744510243};
static const double std_dim0_biased_keep_y[] = {2.041241452319315, 1.7360555546666383,
    1.247219128924647, 1.541103500742244};
static const double std_dim0_biased_keep_dx[] = {0.0, -0.41601331263901004, 0.08908708063747478,
    -0.4325904563487001, 0.40824829046386296, 0.4000128006144328, 0.3563483225498992,
    0.05407380704358751, -0.40824829046386296, 0.016000512024577317, -0.445435403187374,
    0.3785166493051126};
static const double std_all_y[] = {1.9564384772211763};
static const double std_all_dx[] = {-0.04453051457306983, -0.12584710640215385,
    0.025169421280430777, -0.03291385859748639, 0.07163604518276451, 0.07163604518276451,
    0.07163604518276451, 0.07163604518276451, -0.16069707432890415, -0.021297202621902957,
    -0.0677638265242367, 0.14133598103626513};
static const double N[] = {0.5, -1.25, 2.0, -2.0, 0.0, 0.0, 0.0, 0.0, -3.0, 1.0, 3.0, 0.0};
static const double norm1_dim1_y[] = {5.75, 0.0, 7.0};
static const double norm1_dim1_dx[] = {1.0, -1.0, 1.0, -1.0, 0.0, 0.0, 0.0, 0.0, -1.0, 1.0, 1.0,
    0.0};
static const double norm1_all_y[] = {12.75};
static const double norm1_all_dx[] = {1.0, -1.0, 1.0, -1.0, 0.0, 0.0, 0.0, 0.0, -1.0, 1.0, 1.0,
    0.0};
static const double norm2_dim1_y[] = {3.132491021535417, 0.0, 4.358898943540674};
static const double norm2_dim1_dx[] = {0.15961737689352443, -0.39904344223381105,
    0.6384695075740977, -0.6384695075740977, 0.0, 0.0, 0.0, 0.0, -0.6882472016116852,
    0.22941573387056174, 0.6882472016116852, 0.0};
static const double norm2_all_y[] = {5.367727638395972};
static const double norm2_all_dx[] = {0.09314928656652446, -0.23287321641631115,
    0.37259714626609786, -0.37259714626609786, 0.0, 0.0, 0.0, 0.0, -0.5588957193991467,
    0.18629857313304893, 0.5588957193991467, 0.0};
static const double norminf_dim1_y[] = {2.0, 0.0, 3.0};
static const double norminf_dim1_dx[] = {0.0, -0.0, 0.5, -0.5, 0.0, 0.0, 0.0, 0.0, -0.5, 0.0, 0.5,
    0.0};
static const double norminf_all_y[] = {3.0};
static const double norminf_all_dx[] = {0.0, -0.0, 0.0, -0.0, 0.0, 0.0, 0.0, 0.0, -0.5, 0.0, 0.5,
    0.0};

// ---- helpers ----

static tt_dtype dtype_of(int i) { return i % 2 ? TT_F32 : TT_F64; }

static tt_tensor *leaf(tt_tensor *t) { return tt_set_requires_grad(t, true); }

// A leaf holding v (n elements, read as `shape`): contiguous (layout 0) or a view with no unit
// stride: every 2nd element of a 1-D tensor (1-D shapes) or the transpose of a (C, R) tensor.
static tt_tensor *input(tt_dtype dt, int layout, int ndim, const int64_t *shape,
                        const double *v) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    if (layout == 0) return leaf(tt_test_tensor_(dt, ndim, shape, v, n));
    tt_tensor *view;
    if (ndim == 1) {
        tt_tensor *base = tt_zeros(dt, TT_SHAPE(2 * n));
        for (int64_t i = 0; i < n; i++) tt_set_at(base, 2 * i, v[i]);
        view = tt_slice(base, 0, 0, 2 * n, 2);
    } else {
        tt_tensor *base = tt_zeros(dt, TT_SHAPE(shape[1], shape[0]));
        view = tt_transpose(base, 0, 1);
        for (int64_t i = 0; i < n; i++) tt_set_at(view, i, v[i]);
    }
    return leaf(tt_detach(view));
}

// t equals PyTorch's e (n values): NaN where e is NaN, the same infinity, else within
// atol + rtol |e| (the sign of a zero is not compared).
static void assert_ref(tt_tensor *t, const double *e, int64_t n, const char *what) {
    ck_assert_msg(t != NULL, "%s: no tensor", what);
    ck_assert_int_eq(tt_numel(t), n);
    bool f32 = t->dtype == TT_F32;
    double atol = f32 ? 1e-6 : 1e-13, rtol = f32 ? 2e-5 : 1e-12;
    for (int64_t i = 0; i < n; i++) {
        double v = tt_at(t, i);
        bool ok = isnan(e[i]) ? isnan(v) : isinf(e[i]) ? v == e[i]
                                                       : fabs(v - e[i]) <= atol + rtol * fabs(e[i]);
        ck_assert_msg(ok, "%s %s [%lld]: %.17g, PyTorch %.17g", what, tt_dtype_name(t->dtype),
                      (long long)i, v, e[i]);
    }
}
#define NELEM(a) (int64_t)(sizeof(a) / sizeof((a)[0]))

static void backward_ones(tt_tensor *y) {
    tt_backward_with(y, tt_full(y->dtype, y->ndim, y->shape, 1.0));
}

// ---- the elementwise ops over X ----

static tt_tensor *f_leaky_relu(tt_tensor *x) { return tt_leaky_relu(x, 0.2); }
static tt_tensor *f_elu(tt_tensor *x) { return tt_elu(x, 1.5); }
static tt_tensor *f_clamp(tt_tensor *x) { return tt_clamp(x, -0.5, 1.5); }
static tt_tensor *f_clip(tt_tensor *x) { return tt_clip(x, -0.5, 1.5); }
static tt_tensor *f_clamp_lo(tt_tensor *x) { return tt_clamp(x, 0.5, INFINITY); }
static tt_tensor *f_clamp_hi(tt_tensor *x) { return tt_clamp(x, -INFINITY, -0.5); }
static tt_tensor *f_clamp_crossed(tt_tensor *x) { return tt_clamp(x, 1, -1); }
static tt_tensor *f_softplus(tt_tensor *x) { return tt_softplus(x, 1, 20); }
static tt_tensor *f_softplus_b2t3(tt_tensor *x) { return tt_softplus(x, 2, 3); }
static tt_tensor *f_softplus_b05(tt_tensor *x) { return tt_softplus(x, 0.5, 20); }

typedef struct ew_ref {
    const char *name;
    tt_tensor *(*f)(tt_tensor *);
    const double *x, *y, *dx;
    int64_t n;
} ew_ref;

#define REF(nm, fn, in) {#nm, fn, in, nm##_y, nm##_dx, NELEM(in)}
static const ew_ref ew_refs[] = {
    REF(sin, tt_sin, X), REF(cos, tt_cos, X), REF(log1p, tt_log1p, X),
    REF(expm1, tt_expm1, X), REF(reciprocal, tt_reciprocal, X), REF(sign, tt_sign, X),
    REF(floor, tt_floor, X), REF(ceil, tt_ceil, X), REF(round, tt_round, X),
    REF(leaky_relu, f_leaky_relu, X), REF(elu, f_elu, X), REF(clamp, f_clamp, X),
    {"clip", f_clip, X, clamp_y, clamp_dx, NELEM(X)},
    REF(clamp_lo, f_clamp_lo, X), REF(clamp_hi, f_clamp_hi, X),
    REF(clamp_crossed, f_clamp_crossed, X), REF(softplus, f_softplus, X),
    {"softplus_big", f_softplus, S, softplus_big_y, softplus_big_dx, NELEM(S)},
    REF(softplus_b2t3, f_softplus_b2t3, S), REF(softplus_b05, f_softplus_b05, S),
};
#define N_EW (int)(sizeof ew_refs / sizeof ew_refs[0])

// _i: case, dtype, layout.
START_TEST(test_elementwise_pytorch) {
    const ew_ref *c = &ew_refs[_i / 4];
    tt_dtype dt = dtype_of(_i);
    int layout = (_i / 2) % 2;
    tt_scope_begin();
    tt_tensor *x = input(dt, layout, 1, (int64_t[]){c->n}, c->x);
    tt_tensor *y = c->f(x);
    ck_assert_int_eq(y->dtype, dt);
    assert_ref(y, c->y, c->n, c->name);
    backward_ones(y);
    assert_ref(tt_grad(x), c->dx, c->n, c->name);
    tt_scope_end();
}
END_TEST

// ---- the reductions over (R, C) inputs ----

typedef struct red_ref {
    const char *name;
    int kind;  // 0 logsumexp, 1 std, 2 vector_norm
    const double *x;
    int64_t rows, cols;
    int ndims, dim;  // ndims 0: all; else the one dim
    bool keepdim;
    int correction;
    double p;
    const double *y, *dx;
    int64_t ny;
} red_ref;

#define RED(nm, k, in, r, cc, nd, d, kd, corr, pp) \
    {#nm, k, in, r, cc, nd, d, kd, corr, pp, nm##_y, nm##_dx, NELEM(nm##_y)}
static const red_ref red_refs[] = {
    RED(logsumexp_last, 0, L, 5, 3, 1, -1, false, 0, 0),
    RED(logsumexp_dim0_keep, 0, R, 3, 4, 1, 0, true, 0, 0),
    RED(std_dim1, 1, R, 3, 4, 1, 1, false, 1, 0),
    RED(std_dim0_biased_keep, 1, R, 3, 4, 1, 0, true, 0, 0),
    RED(std_all, 1, R, 3, 4, 0, 0, false, 1, 0),
    RED(norm1_dim1, 2, N, 3, 4, 1, 1, false, 0, 1),
    RED(norm1_all, 2, N, 3, 4, 0, 0, false, 0, 1),
    RED(norm2_dim1, 2, N, 3, 4, 1, 1, false, 0, 2),
    RED(norm2_all, 2, N, 3, 4, 0, 0, false, 0, 2),
    RED(norminf_dim1, 2, N, 3, 4, 1, 1, false, 0, INFINITY),
    RED(norminf_all, 2, N, 3, 4, 0, 0, false, 0, INFINITY),
};
#define N_RED (int)(sizeof red_refs / sizeof red_refs[0])

START_TEST(test_reductions_pytorch) {
    const red_ref *c = &red_refs[_i / 4];
    tt_dtype dt = dtype_of(_i);
    int layout = (_i / 2) % 2;
    tt_scope_begin();
    tt_tensor *x = input(dt, layout, 2, (int64_t[]){c->rows, c->cols}, c->x);
    int dims[1] = {c->dim};
    tt_tensor *y = c->kind == 0 ? tt_logsumexp(x, c->ndims, dims, c->keepdim)
                   : c->kind == 1 ? tt_std(x, c->ndims, dims, c->correction, c->keepdim)
                                  : tt_vector_norm(x, c->p, c->ndims, dims, c->keepdim);
    ck_assert_int_eq(y->dtype, dt);
    if (c->ndims == 0) ck_assert_int_eq(y->ndim, 0);
    else ck_assert_int_eq(y->ndim, c->keepdim ? 2 : 1);
    assert_ref(y, c->y, c->ny, c->name);
    backward_ones(y);
    assert_ref(tt_grad(x), c->dx, c->rows * c->cols, c->name);
    tt_scope_end();
}
END_TEST

// ---- behaviour ----

// Without grad nothing is recorded; a no-grad input gives an output without history.
START_TEST(test_no_grad_records_nothing) {
    tt_scope_begin();
    tt_tensor *x = tt_test_tensor(TT_F64, TT_SHAPE(2, 2), -1, 0.5, 2, 3);
    ck_assert(!tt_clamp(x, 0, 1)->requires_grad);
    ck_assert(!tt_softplus(x, 1, 20)->requires_grad);
    ck_assert(!tt_logsumexp(x, TT_DIMS(1), false)->requires_grad);
    ck_assert(!tt_std(x, TT_DIMS(1), 1, false)->requires_grad);
    ck_assert(!tt_vector_norm(x, 2, TT_DIMS(1), false)->requires_grad);
    leaf(x);
    tt_no_grad_begin();
    ck_assert(!tt_clamp(x, 0, 1)->requires_grad);
    ck_assert(!tt_softplus(x, 1, 20)->requires_grad);
    tt_no_grad_end();
    ck_assert(tt_clamp(x, 0, 1)->requires_grad);
    tt_scope_end();
}
END_TEST

// The compositions leave nothing behind outside a scope but their result.
START_TEST(test_compositions_outside_scope) {
    tt_tensor *x = leaf(tt_test_tensor(TT_F32, TT_SHAPE(2, 3), -1, 0.5, 2, 30, 0, -4));
    tt_tensor *y[4] = {tt_softplus(x, 1, 20), tt_logsumexp(x, TT_DIMS(1), false),
                       tt_std(x, TT_DIMS(1), 1, false), tt_vector_norm(x, 2, TT_DIMS(1), false)};
    for (int k = 0; k < 4; k++) {
        tt_tensor *s = tt_sum_all(y[k]);
        tt_backward(s);
        tt_release(s);
    }
    ck_assert(tt_grad(x) != NULL);
    for (int k = 0; k < 4; k++) tt_release(y[k]);
    tt_release(x);
}
END_TEST

// ---- misuse aborts ----

START_TEST(test_abort_clamp_nan_bound) {
    tt_expect_abort("tt_clamp: a bound is NaN (lo nan, hi 1) for x of shape (2, 2); pass "
                    "-INFINITY or INFINITY");
    tt_clamp(tt_zeros(TT_F32, TT_SHAPE(2, 2)), NAN, 1);
}
END_TEST

START_TEST(test_abort_clip_integer) {
    tt_expect_abort("tt_clip: tensor (3,) is i64; this op needs f32 or f64");
    tt_clip(tt_zeros(TT_I64, TT_SHAPE(3)), 0, 1);
}
END_TEST

START_TEST(test_abort_softplus_beta) {
    tt_expect_abort("tt_softplus: beta 0 must be finite and nonzero");
    tt_softplus(tt_zeros(TT_F64, TT_SHAPE(3)), 0, 20);
}
END_TEST

START_TEST(test_abort_norm_p) {
    tt_expect_abort("tt_vector_norm: p = 3 is not supported (x has shape (3,)); use p = 1, 2 "
                    "or INFINITY");
    tt_vector_norm(tt_zeros(TT_F64, TT_SHAPE(3)), 3, 0, NULL, false);
}
END_TEST

START_TEST(test_abort_logsumexp_dim) {
    tt_expect_abort("tt_logsumexp: dim 2 is out of range for x of shape (2, 3)");
    tt_logsumexp(tt_zeros(TT_F64, TT_SHAPE(2, 3)), TT_DIMS(2), false);
}
END_TEST

START_TEST(test_abort_norm_dim) {
    tt_expect_abort("tt_vector_norm: dim -3 is out of range for x of shape (2, 3)");
    tt_vector_norm(tt_zeros(TT_F64, TT_SHAPE(2, 3)), 2, TT_DIMS(-3), false);
}
END_TEST

START_TEST(test_abort_std_integer) {
    tt_expect_abort("tt_std: tensor (2,) is i32; this op needs f32 or f64");
    tt_std(tt_zeros(TT_I32, TT_SHAPE(2)), 0, NULL, 1, false);
}
END_TEST

int main(void) {
    Suite *s = suite_create("ops_math");
    TCase *ref = tt_tcase("pytorch");
    tcase_add_loop_test(ref, test_elementwise_pytorch, 0, 4 * N_EW);
    tcase_add_loop_test(ref, test_reductions_pytorch, 0, 4 * N_RED);
    suite_add_tcase(s, ref);

    TCase *beh = tt_tcase("behaviour");
    tcase_add_test(beh, test_no_grad_records_nothing);
    tcase_add_test(beh, test_compositions_outside_scope);
    suite_add_tcase(s, beh);

    TCase *ab = tt_tcase_aborts("aborts");
    tcase_add_test_raise_signal(ab, test_abort_clamp_nan_bound, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_clip_integer, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_softplus_beta, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_norm_p, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_logsumexp_dim, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_norm_dim, SIGABRT);
    tcase_add_test_raise_signal(ab, test_abort_std_integer, SIGABRT);
    suite_add_tcase(s, ab);
    return tt_test_run(s);
}
