"""minigrad.nn: Module, Parameter, layers and losses (names as in ``torch.nn``)."""
from . import functional, init, utils
from .attention import MultiheadAttention
from .activation import (ELU, GELU, Hardswish, Hardtanh, LeakyReLU, LogSigmoid, LogSoftmax,
                         Mish, ReLU, ReLU6, SiLU, Sigmoid, Softmax, Softmin, Softplus, Tanh)
from .container import Flatten, Identity, ModuleList, Sequential
from .dropout import Dropout, dropout_context
from .embedding import Embedding
from .linear import Linear
from .quantized import (Linear4bit, Linear8bitLt, QuantizedLinear, dequantize_model,
                        quantize_model, quantized_layers)
from .lora import (LoRALinear, apply_lora, load_lora_state_dict, lora_layers, lora_state_dict,
                   merge_and_unload)
from .loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, MSELoss, NLLLoss
from .module import Module, Parameter

# convolution, normalization and pooling layers
from .conv import Conv1d, Conv2d, ConvTranspose2d
from .normalization import (BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm,
                            apply_merged_running_stats, batchnorm_layers,
                            set_merge_running_stats)
from .pooling import AvgPool2d, MaxPool2d, MaxUnpool2d
from .layers_more import (CELU, SELU, AdaptiveAvgPool1d, AdaptiveAvgPool2d, AvgPool1d, Fold,
                          Hardsigmoid, HuberLoss, KLDivLoss, L1Loss, MaxPool1d, SmoothL1Loss,
                          Unfold)

# exact BatchNorm under gradient accumulation (multi-pass)
from .exact_batchnorm import ExactBatchNormPasses, exact_batchnorm_backward

# BatchNorm over the batches of every data-parallel rank (minigrad.distributed)
from .sync_batchnorm import SyncBatchNorm
