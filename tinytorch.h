// tinytorch.c: an autograd tensor framework in C11. The umbrella header.
//
//     #include "tinytorch.h"
//     cc my_model.c $(pkg-config --cflags --libs tinytorch)
//
// tensor/tensor.h      tensors, views, RNG, ownership scopes, counters, errors
// autograd/autograd.h  differentiable ops, backward, gradcheck
// nn/nn.h              modules, parameter lists, init schemes, losses
// io/checkpoint.h      checkpoint files: named tensors + metadata, checksummed, atomic writes
// io/safetensors.h     Hugging Face safetensors files: read, validate, write
// io/gguf.h            GGUF files (ggml, llama.cpp): read, validate, write; Q8_0 / Q4_0 blocks
// compress/compress.h int8 Linears, quantization of a module tree, pruning, low rank
// data/data.h          char tokenizer, text dataset, batch sampler
// data/bpe.h           byte-level BPE: GPT-2's tokenizer (tiktoken-exact), BPE training
// data/tokenizer.h     tokenizer by name: char | gpt2 | a vocab file; dataset, checkpoint
// data/idx.h           IDX files (MNIST family, plain or gzip), Fashion-MNIST
// data/loader.h        datasets, the data loader (batches, shuffle, prefetch), image transforms
// data/csv.h           numeric CSV files (plain or gzip), scikit-learn's digits
// autograd/profiler.h  per-op time, FLOPs and bytes, allocator figures, a Chrome trace
// train/train.h        the training loop: accumulation, all-reduce, eval, .best, stops
//
// Models are not part of the framework's umbrella: a program that uses one includes its header,
// e.g. #include "models/gpt/gpt.h" (the GPT: config, forward, loss, generation, KV cache).
#ifndef TINYTORCH_H
#define TINYTORCH_H

#include "tensor/tensor.h"
#include "autograd/autograd.h"
#include "nn/nn.h"
#include "optim/optim.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "io/gguf.h"
#include "compress/compress.h"
#include "data/data.h"
#include "data/bpe.h"
#include "data/tokenizer.h"
#include "data/shards.h"
#include "data/path.h"
#include "data/idx.h"
#include "data/loader.h"
#include "data/csv.h"
#include "autograd/profiler.h"
#include "train/train.h"

#endif  // TINYTORCH_H
