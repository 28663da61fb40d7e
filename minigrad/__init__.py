"""minigrad: a deep-learning framework written from scratch on NumPy, with CuPy for GPUs.

The public face; everything here is re-exported from the modules that define it.
"""
from . import backend, cuda, memory, return_types
from .autograd import Function, enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .checkpointing import checkpoint, checkpoint_sequential
from .creation import (abs, all, amax, amin, any, arange, argmax, argmin, argsort,  # noqa: A004
                       broadcast_to, cat, ceil, clip, concatenate, cos, cumsum, diagonal,
                       empty, erf, exp, exp2, eye, flatten, flip, floor, floor_divide, full,
                       full_like, gather, index_select, isfinite, isinf, isnan, lerp,
                       linspace, log, log2, log10, log_softmax, logsumexp, matmul, max,
                       maximum, mean, min, minimum, ones, ones_like, permute, prod, rand,
                       randn, relu, remainder, reshape, roll, round, rsqrt, scatter,
                       scatter_add, scatter_reduce, sigmoid, sign, sin, softmax, sort, sqrt,
                       squeeze, stack, std, sum, take_along_dim, tanh, tensor, topk,
                       transpose, trunc, unflatten, unsqueeze, var, where, zeros, zeros_like)
from .functions.attention import masked_fill, tril, triu
from .gradcheck import GradcheckError, gradcheck
from .random import manual_seed
from .serialization import CheckpointError, load, save
from .tensor import (Tensor, bool_, float16, float32, float64, get_default_dtype, int32,
                     int64, set_default_dtype)
from .tensor_functions import (acos, acosh, addmm, allclose, arccos, arccosh, arcsin,
                               arcsinh, arctan, arctan2, arctanh, argwhere, asin, asinh,
                               atan, atan2, atanh, baddbmm, bitwise_and, bitwise_left_shift,
                               bitwise_not, bitwise_or, bitwise_right_shift, bitwise_xor,
                               bmm, chunk, clamp, copysign, cosh, cummax, cummin, cumprod,
                               dot, einsum, flip, fmod, isclose, logaddexp, logcumsumexp, mm,
                               moveaxis, movedim, mv, nonzero, repeat_interleave, sinh,
                               split, std_mean, tan, tile, var_mean)
from .tensor_functions import (addbmm, addcdiv, addcmul, addmv, addr, aminmax,  # noqa: E402
                               atleast_1d, atleast_2d, atleast_3d, broadcast_shapes,
                               broadcast_tensors, column_stack, count_nonzero, cross,
                               deg2rad, diag, diff, dist, dsplit, dstack, expm1, float_power,
                               fliplr, flipud, fmax, fmin, frac, ger, hsplit, hstack, hypot,
                               inner, isneginf, isposinf, kron, log1p, logaddexp2,
                               logical_and, logical_not, logical_or, logical_xor, logit,
                               masked_select, nan_to_num, nanmean, nansum, narrow, outer,
                               positive, rad2deg, ravel, reciprocal, rot90, rsub, select,
                               sgn, signbit, sinc, take, tensor_split, tensordot, trace,
                               unbind, vsplit, vstack, xlogy)

# Last: these build on everything above.
from . import data, nn, optim  # noqa: E402
from . import models  # noqa: E402
from . import linalg  # noqa: E402
from . import distributed  # noqa: E402  (data parallelism; mpi4py is loaded by init() only)

__version__ = "0.1.0"
