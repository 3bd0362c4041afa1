/* The pkb solution ABI, version 1: what a candidate (one .cu or .cpp file, built by pkb into
 * a shared object) exports and what it receives. C linkage; stable within a version.
 *
 * A candidate exports:
 *   int  pkb_abi_version(void);                 required: return PKB_ABI_VERSION
 *   int  pkb_run(pkb_ctx*, const pkb_tensor* in, int n_in, pkb_tensor* out, int n_out);
 *                                                required, timed: compute the outputs
 *   int  pkb_init(pkb_ctx*, const pkb_tensor* in, int n_in, const pkb_tensor* out, int n_out);
 *                                                optional, untimed, once per run: allocate
 *                                                symmetric buffers, streams, handles. Tensors
 *                                                carry shapes and dtypes; data is NULL.
 *   void pkb_finalize(pkb_ctx*);                 optional: free what pkb_init made
 * Non-zero returns are errors; pkb_set_error() may say why.
 *
 * Every rank is a process of its own and calls these with its own context. Inputs and
 * outputs are in spec order (`pkb show <problem>` lists them); both live in the symmetric
 * heap at the same offset on every rank, so ctx->peer_ptr() (host) or pkb::dev::peer_ptr()
 * (device, pkb/device.cuh) gives a peer's copy of any input or output. Inputs are
 * read-only: pkb checks them after every call. Outputs are filled with NaN (or a sentinel)
 * before every call, so every element must be written. A tensor that is empty on this rank
 * (rank-dependent shapes) still has its slot, sized for the largest rank, at the same offset.
 * pkb fills inputs and poisons outputs on ctx->stream before the call (CUDA), or before
 * calling (CPU).
 *
 * On the CUDA device all work must be ordered on ctx->stream (other streams must join it
 * before pkb_run returns); pkb times that stream and flags work that escapes it. On the
 * CPU device all work must be done when pkb_run returns.
 */
#ifndef PKB_SOLUTION_H
#define PKB_SOLUTION_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PKB_ABI_VERSION 1
#define PKB_MAX_DIMS 8

typedef enum {
  PKB_BF16 = 0, PKB_FP16, PKB_FP32, PKB_FP64, PKB_INT8, PKB_INT16, PKB_INT32, PKB_INT64, PKB_UINT8,
  PKB_BOOL, PKB_FP8_E4M3, PKB_FP8_E5M2, PKB_COMPLEX64, PKB_COMPLEX128
} pkb_dtype;

typedef struct {
  const char* name;                 /* the spec's name for it */
  void* data;                       /* device memory on CUDA (host if on_host), host memory on CPU */
  int32_t ndim;
  int32_t dtype;                    /* a pkb_dtype */
  int64_t sizes[PKB_MAX_DIMS];      /* outputs with data-dependent sizes: the capacity; pkb_run
                                       writes the actual size of each dynamic dim here */
  int64_t strides[PKB_MAX_DIMS];    /* in elements; pkb's tensors are contiguous */
  uint8_t dynamic[PKB_MAX_DIMS];    /* 1 where the spec writes the dim as "<= capacity" */
  int32_t on_host;                  /* 1: host memory even on the CUDA device */
  int32_t symmetric;                /* 1: in the symmetric heap (same offset on every rank) */
} pkb_tensor;

typedef enum { PKB_ARG_INT = 0, PKB_ARG_FLOAT, PKB_ARG_BOOL, PKB_ARG_STRING, PKB_ARG_INT_LIST } pkb_arg_kind;

/* Non-tensor arguments: the spec's [args], then its sizes and vars (M, N, W, rank, ...) as ints. */
typedef struct {
  const char* name;
  int32_t kind;                     /* a pkb_arg_kind */
  int64_t i;                        /* INT, BOOL */
  double f;                         /* FLOAT */
  const char* s;                    /* STRING */
  const int64_t* list;              /* INT_LIST */
  int64_t list_len;
} pkb_arg;

typedef struct pkb_ctx pkb_ctx;
struct pkb_ctx {
  int32_t abi_version;
  int32_t rank, world;
  int32_t device;                   /* CUDA ordinal, -1 on the CPU device */
  void* stream;                     /* cudaStream_t to run on (NULL on the CPU device) */
  void* nccl_comm;                  /* an ncclComm_t of all ranks for the candidate's own use, or
                                       NULL (CPU device, or ranks sharing a GPU) */
  const char* problem;              /* the problem's slug */

  /* The symmetric heap: every rank's region as mapped in this process, and the signal pads
     (uint32 slots that start zeroed; see pkb/device.cuh for the protocol). */
  void* const* heap_bases;          /* host array [world] */
  void* const* heap_bases_dev;      /* device array [world] on CUDA; = heap_bases on CPU */
  uint32_t* const* pads;            /* host array [world] */
  uint32_t* const* pads_dev;        /* device array [world] on CUDA; = pads on CPU */
  size_t pad_slots;                 /* uint32 slots per pad: channels * world */

  const pkb_arg* args;
  int32_t n_args;

  /* In pkb_init only: reserve `bytes` in the symmetric heap (by default twice the rank's
     inputs and outputs, at least 256 MiB; pkb eval --heap-size). Every rank must make the
     same calls in the same order; returns this rank's pointer (NULL when the heap is full). */
  void* (*symm_alloc)(pkb_ctx* ctx, size_t bytes);
  /* Any rank's address of `local`, a pointer into this rank's heap region. */
  void* (*peer_ptr)(pkb_ctx* ctx, const void* local, int peer);
  /* In pkb_init only: a host barrier of all ranks. */
  void (*host_barrier)(pkb_ctx* ctx);
  /* Lookups in args; `found` (may be NULL) says whether the name exists. */
  int64_t (*arg_int)(pkb_ctx* ctx, const char* name, int* found);
  double (*arg_float)(pkb_ctx* ctx, const char* name, int* found);
  /* Say why the last call failed; pkb reports it. */
  void (*set_error)(pkb_ctx* ctx, const char* message);

  void* user;                       /* the candidate's own state, kept across calls; starts NULL */
  void* internal;                   /* pkb's */
};

/* Bytes per element of a pkb_dtype; 0 for a value that is none. */
static inline size_t pkb_dtype_size(int32_t dtype) {
  switch (dtype) {
    case PKB_FP64: case PKB_INT64: case PKB_COMPLEX64: return 8;
    case PKB_COMPLEX128: return 16;
    case PKB_FP32: case PKB_INT32: return 4;
    case PKB_BF16: case PKB_FP16: case PKB_INT16: return 2;
    case PKB_INT8: case PKB_UINT8: case PKB_BOOL: case PKB_FP8_E4M3: case PKB_FP8_E5M2: return 1;
    default: return 0;
  }
}

typedef int (*pkb_abi_version_fn)(void);
typedef int (*pkb_init_fn)(pkb_ctx*, const pkb_tensor*, int, const pkb_tensor*, int);
typedef int (*pkb_run_fn)(pkb_ctx*, const pkb_tensor*, int, pkb_tensor*, int);
typedef void (*pkb_finalize_fn)(pkb_ctx*);

#ifdef __cplusplus
}
#endif

#ifdef __cplusplus
#define PKB_EXPORT extern "C" __attribute__((visibility("default")))
#else
#define PKB_EXPORT __attribute__((visibility("default")))
#endif

#endif /* PKB_SOLUTION_H */
