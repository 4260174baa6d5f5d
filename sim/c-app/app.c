/*
 * A plain C HSA program, built against the ROCm headers and linked with -lhsa-runtime64 like any
 * ROCm application: it initialises HSA, loads the code object named on the command line onto
 * every GPU (so it must be built for their target), dispatches `vadd` on each, and checks the
 * result on the host. It annotates its work with roctx, linked against ROCm's libroctx64.so.4:
 *
 *   cc app.c -I/usr/include/hsa -lhsa-runtime64 -lroctx64 -o app && ./app kernels-gfx942.co
 *   ./app kernels-gfx942.co 4           # four iterations
 *   ./app kernels-gfx942.co 4 misuse    # and roctx used wrongly, as applications do
 *   ./app kernels-gfx942.co 4 graph     # each vadd a graph of four, behind one doorbell
 *
 * The roctx calls, in order (every iteration i from 0, every GPU g by agent order):
 *   roctxNameOsThread("c-app main"), roctxMarkA("start"), id = roctxRangeStartA("all iterations");
 *   per iteration: roctxRangePushA("iteration i"); when i is odd roctxProfilerResume(0);
 *     per GPU: roctxRangePushA("vadd i on gfxNNN"), the vadd dispatch, roctxRangePop();
 *     when i is odd roctxProfilerPause(0); roctxRangePop();
 *   roctxRangeStop(id), roctxMarkA("end");
 *   with `misuse`: roctxRangePop() on an empty stack, roctxRangeStop(id + 1000), one vadd per GPU
 *     inside roctxRangePushA("bad \xff name") (not UTF-8, popped), and
 *     roctxRangePushA("left open") never popped;
 *   then hsa_shut_down.
 *
 * With `graph`, each vadd dispatch is a graph written behind one doorbell, as HIP graph launches
 * submit them: c1 = a + b and c2 = a + b without the barrier bit; a barrier-AND on both; c3 =
 * c1 + c2; a barrier-OR on c3's signal and one never completed; c4 = c3 + a; a barrier-AND on
 * c4's signal whose completion signal the host waits for. It checks c4 = 3a + 2b and that every
 * kernel's signal completed by then.
 *
 * Exit status: 0 if every GPU computed the right sums, 1 otherwise (with a message on stderr).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hsa.h>
#include <hsa_ext_amd.h>

/* The roctx C API of ROCm's roctx.h (libroctx64.so.4). */
typedef uint64_t roctx_range_id_t;
typedef uint64_t roctx_thread_id_t;
void roctxMarkA(const char *message);
int roctxRangePushA(const char *message);
int roctxRangePop(void);
roctx_range_id_t roctxRangeStartA(const char *message);
void roctxRangeStop(roctx_range_id_t id);
int roctxProfilerPause(roctx_thread_id_t tid);
int roctxProfilerResume(roctx_thread_id_t tid);
int roctxNameOsThread(const char *name);

#define N 1000
#define WORKGROUP 256

#define CHECK(call)                                                              \
  do {                                                                           \
    hsa_status_t status_ = (call);                                               \
    if (status_ != HSA_STATUS_SUCCESS && status_ != HSA_STATUS_INFO_BREAK) {     \
      fprintf(stderr, "c-app: %s failed with status 0x%x\n", #call, status_);    \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

struct agents {
  hsa_agent_t gpus[16];
  int gpu_count;
  hsa_agent_t cpu;
  int have_cpu;
};

static hsa_status_t collect_agent(hsa_agent_t agent, void *data) {
  struct agents *agents = data;
  hsa_device_type_t type;
  CHECK(hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type));
  if (type == HSA_DEVICE_TYPE_GPU && agents->gpu_count < 16) {
    agents->gpus[agents->gpu_count++] = agent;
  } else if (type == HSA_DEVICE_TYPE_CPU && !agents->have_cpu) {
    agents->cpu = agent;
    agents->have_cpu = 1;
  }
  return HSA_STATUS_SUCCESS;
}

struct pool_search {
  uint32_t flag;
  hsa_amd_memory_pool_t pool;
  int found;
};

static hsa_status_t find_pool(hsa_amd_memory_pool_t pool, void *data) {
  struct pool_search *search = data;
  hsa_amd_segment_t segment;
  uint32_t flags;
  CHECK(hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &segment));
  if (segment != HSA_AMD_SEGMENT_GLOBAL) return HSA_STATUS_SUCCESS;
  CHECK(hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags));
  if ((flags & search->flag) && !search->found) {
    search->pool = pool;
    search->found = 1;
    return HSA_STATUS_INFO_BREAK;
  }
  return HSA_STATUS_SUCCESS;
}

static hsa_amd_memory_pool_t cpu_pool(hsa_agent_t cpu, uint32_t flag) {
  struct pool_search search = {flag, {0}, 0};
  CHECK(hsa_amd_agent_iterate_memory_pools(cpu, find_pool, &search));
  if (!search.found) {
    fprintf(stderr, "c-app: no CPU memory pool with flag 0x%x\n", flag);
    exit(1);
  }
  return search.pool;
}

static void *allocate(hsa_amd_memory_pool_t pool, size_t size, hsa_agent_t gpu) {
  void *ptr = NULL;
  CHECK(hsa_amd_memory_pool_allocate(pool, size, 0, &ptr));
  CHECK(hsa_amd_agents_allow_access(1, &gpu, NULL, ptr));
  return ptr;
}

static unsigned char *read_file(const char *path, size_t *size) {
  FILE *file = fopen(path, "rb");
  if (!file) {
    fprintf(stderr, "c-app: cannot open %s\n", path);
    exit(1);
  }
  fseek(file, 0, SEEK_END);
  *size = (size_t)ftell(file);
  fseek(file, 0, SEEK_SET);
  unsigned char *bytes = malloc(*size);
  if (fread(bytes, 1, *size, file) != *size) {
    fprintf(stderr, "c-app: cannot read %s\n", path);
    exit(1);
  }
  fclose(file);
  return bytes;
}

static int graph_mode = 0;

static void *slot_address(hsa_queue_t *queue, uint64_t index) {
  return (uint8_t *)queue->base_address + 64 * (index & (queue->size - 1));
}

/* The packet slot of queue index `index`, cleared but for its header, which stays INVALID
   until published. */
static void *slot(hsa_queue_t *queue, uint64_t index) {
  uint8_t *packet = slot_address(queue, index);
  memset(packet + 4, 0, 60);
  return packet;
}

static uint16_t header_of(int type, int barrier) {
  return (uint16_t)((type << HSA_PACKET_HEADER_TYPE) | (barrier << HSA_PACKET_HEADER_BARRIER) |
                    (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                    (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE));
}

/* Fills a cleared slot with a dispatch of vadd over N elements (its header left INVALID). */
static void fill_vadd(hsa_kernel_dispatch_packet_t *k, uint64_t kernel_object, uint32_t group_size,
                      uint32_t private_size, void *kernarg, hsa_signal_t completion) {
  k->setup = 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
  k->workgroup_size_x = WORKGROUP;
  k->workgroup_size_y = 1;
  k->workgroup_size_z = 1;
  k->grid_size_x = (N + WORKGROUP - 1) / WORKGROUP * WORKGROUP;
  k->grid_size_y = 1;
  k->grid_size_z = 1;
  k->private_segment_size = private_size;
  k->group_segment_size = group_size;
  k->kernel_object = kernel_object;
  k->kernarg_address = kernarg;
  k->completion_signal = completion;
}

/* The first word of a kernel dispatch packet: its header and setup. */
static uint32_t kernel_word(int barrier) {
  uint32_t setup = 1 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
  return header_of(HSA_PACKET_TYPE_KERNEL_DISPATCH, barrier) | (setup << 16);
}

/* vadd(x, y) -> z as one graph node: its kernarg segment and completion signal. */
struct node {
  void *kernarg;
  hsa_signal_t signal;
};

/* Writes the graph's seven packets from `first`, publishes their headers in order and rings
   the doorbell once. */
static void submit_graph(hsa_queue_t *queue, uint64_t first, struct node nodes[4],
                         hsa_signal_t never, hsa_signal_t done, uint64_t kernel_object,
                         uint32_t group_size, uint32_t private_size) {
  uint32_t words[7];
  uint64_t index = first;
  int node = 0;
  /* kernel, kernel, AND(0, 1), kernel, OR(2, never), kernel, AND(3) -> done */
  const int kinds[7] = {0, 0, 1, 0, 2, 0, 3};
  for (int i = 0; i < 7; ++i, ++index) {
    void *packet = slot(queue, index);
    if (kinds[i] == 0) {
      fill_vadd(packet, kernel_object, group_size, private_size, nodes[node].kernarg,
                nodes[node].signal);
      node++;
      words[i] = kernel_word(0);
    } else {
      hsa_barrier_and_packet_t *b = packet;
      if (kinds[i] == 1) {
        b->dep_signal[0] = nodes[0].signal;
        b->dep_signal[1] = nodes[1].signal;
      } else if (kinds[i] == 2) {
        b->dep_signal[0] = nodes[2].signal;
        b->dep_signal[1] = never;
      } else {
        b->dep_signal[0] = nodes[3].signal;
        b->completion_signal = done;
      }
      int type = kinds[i] == 2 ? HSA_PACKET_TYPE_BARRIER_OR : HSA_PACKET_TYPE_BARRIER_AND;
      words[i] = header_of(type, 0);
    }
  }
  for (int i = 0; i < 7; ++i) {
    __atomic_store_n((uint32_t *)slot_address(queue, first + i), words[i], __ATOMIC_RELEASE);
  }
  hsa_signal_store_screlease(queue->doorbell_signal, (hsa_signal_value_t)(first + 6));
}

/* Runs vadd as a graph of four nodes on `queue`; returns 0 when c4 = 3a + 2b. */
static int run_graph(hsa_queue_t *queue, hsa_agent_t gpu, hsa_amd_memory_pool_t buffers,
                     hsa_amd_memory_pool_t kernargs, uint32_t kernarg_size,
                     uint64_t kernel_object, uint32_t group_size, uint32_t private_size,
                     float *a, float *b) {
  float *c[4];
  struct node nodes[4];
  struct {
    float *x, *y, *z;
    uint32_t n;
  } __attribute__((packed)) args[4];
  for (int i = 0; i < 4; ++i) {
    c[i] = allocate(buffers, N * sizeof(float), gpu);
    for (int j = 0; j < N; ++j) {
      c[i][j] = -1.0f;
    }
  }
  float *inputs[4][2] = {{a, b}, {a, b}, {c[0], c[1]}, {c[2], a}};
  for (int i = 0; i < 4; ++i) {
    args[i].x = inputs[i][0];
    args[i].y = inputs[i][1];
    args[i].z = c[i];
    args[i].n = N;
    nodes[i].kernarg = allocate(kernargs, kernarg_size, gpu);
    memset(nodes[i].kernarg, 0, kernarg_size);
    memcpy(nodes[i].kernarg, &args[i], sizeof(args[i]));
    CHECK(hsa_signal_create(1, 0, NULL, &nodes[i].signal));
  }
  hsa_signal_t never, done;
  CHECK(hsa_signal_create(1, 0, NULL, &never));
  CHECK(hsa_signal_create(1, 0, NULL, &done));
  uint64_t first = hsa_queue_add_write_index_relaxed(queue, 7);
  submit_graph(queue, first, nodes, never, done, kernel_object, group_size, private_size);
  while (hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1, UINT64_MAX,
                                   HSA_WAIT_STATE_BLOCKED) >= 1) {
  }
  int wrong = 0;
  for (int i = 0; i < 4; ++i) {
    if (hsa_signal_load_scacquire(nodes[i].signal) != 0) {
      fprintf(stderr, "c-app: the graph completed before its kernel %d did\n", i + 1);
      wrong = 1;
    }
  }
  for (int j = 0; j < N && !wrong; ++j) {
    float want = 3.0f * a[j] + 2.0f * b[j];
    if (c[3][j] != want) {
      fprintf(stderr, "c-app: c4[%d] = %f, expected %f\n", j, c[3][j], want);
      wrong = 1;
    }
  }
  for (int i = 0; i < 4; ++i) {
    CHECK(hsa_signal_destroy(nodes[i].signal));
    CHECK(hsa_amd_memory_pool_free(nodes[i].kernarg));
    CHECK(hsa_amd_memory_pool_free(c[i]));
  }
  CHECK(hsa_signal_destroy(never));
  CHECK(hsa_signal_destroy(done));
  return wrong;
}

/* Loads the code object, dispatches vadd on `gpu` and checks it; returns 0 on success. */
static int run_on(hsa_agent_t gpu, hsa_agent_t cpu, const unsigned char *code, size_t code_size) {
  hsa_code_object_reader_t reader;
  hsa_executable_t executable;
  hsa_executable_symbol_t symbol;
  CHECK(hsa_code_object_reader_create_from_memory(code, code_size, &reader));
  CHECK(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL,
                                  &executable));
  CHECK(hsa_executable_load_agent_code_object(executable, gpu, reader, NULL, NULL));
  CHECK(hsa_executable_freeze(executable, NULL));
  CHECK(hsa_executable_get_symbol_by_name(executable, "vadd.kd", &gpu, &symbol));

  uint64_t kernel_object;
  uint32_t kernarg_size, group_size, private_size;
  CHECK(hsa_executable_symbol_get_info(symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
                                       &kernel_object));
  CHECK(hsa_executable_symbol_get_info(
      symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE, &kernarg_size));
  CHECK(hsa_executable_symbol_get_info(symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE,
                                       &group_size));
  CHECK(hsa_executable_symbol_get_info(
      symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE, &private_size));

  hsa_amd_memory_pool_t buffers = cpu_pool(cpu, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED);
  hsa_amd_memory_pool_t kernargs = cpu_pool(cpu, HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT);
  float *a = allocate(buffers, N * sizeof(float), gpu);
  float *b = allocate(buffers, N * sizeof(float), gpu);
  float *c = allocate(buffers, N * sizeof(float), gpu);
  for (int i = 0; i < N; ++i) {
    a[i] = (float)i;
    b[i] = 0.5f * (float)i;
    c[i] = -1.0f;
  }
  struct {
    float *a, *b, *c;
    uint32_t n;
  } __attribute__((packed)) args = {a, b, c, N};
  if (kernarg_size < sizeof(args)) {
    fprintf(stderr, "c-app: vadd takes %u bytes of arguments, expected at least %zu\n",
            kernarg_size, sizeof(args));
    return 1;
  }
  void *kernarg = allocate(kernargs, kernarg_size, gpu);
  memset(kernarg, 0, kernarg_size);
  memcpy(kernarg, &args, sizeof(args));

  hsa_queue_t *queue;
  hsa_signal_t done;
  CHECK(hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_SINGLE, NULL, NULL, UINT32_MAX, UINT32_MAX,
                         &queue));
  CHECK(hsa_signal_create(1, 0, NULL, &done));
  int wrong = 0;
  if (graph_mode) {
    wrong = run_graph(queue, gpu, buffers, kernargs, kernarg_size, kernel_object, group_size,
                      private_size, a, b);
  } else {
    uint64_t index = hsa_queue_add_write_index_relaxed(queue, 1);
    void *packet = slot(queue, index);
    fill_vadd(packet, kernel_object, group_size, private_size, kernarg, done);
    __atomic_store_n((uint32_t *)packet, kernel_word(1), __ATOMIC_RELEASE);
    hsa_signal_store_screlease(queue->doorbell_signal, (hsa_signal_value_t)index);
    while (hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1, UINT64_MAX,
                                     HSA_WAIT_STATE_BLOCKED) >= 1) {
    }
    for (int i = 0; i < N; ++i) {
      if (c[i] != a[i] + b[i]) {
        fprintf(stderr, "c-app: c[%d] = %f, expected %f\n", i, c[i], a[i] + b[i]);
        wrong = 1;
        break;
      }
    }
  }
  CHECK(hsa_signal_destroy(done));
  CHECK(hsa_queue_destroy(queue));
  CHECK(hsa_amd_memory_pool_free(a));
  CHECK(hsa_amd_memory_pool_free(b));
  CHECK(hsa_amd_memory_pool_free(c));
  CHECK(hsa_amd_memory_pool_free(kernarg));
  CHECK(hsa_executable_destroy(executable));
  CHECK(hsa_code_object_reader_destroy(reader));
  return wrong;
}

/* Dispatches vadd on every GPU, each inside a roctx range `range` or naming the iteration and
   the GPU. */
static int run_all(struct agents *agents, const unsigned char *code, size_t code_size,
                   const char *range, int iteration) {
  int failures = 0;
  for (int g = 0; g < agents->gpu_count; ++g) {
    char name[64] = {0};
    char label[96];
    CHECK(hsa_agent_get_info(agents->gpus[g], HSA_AGENT_INFO_NAME, name));
    if (range) {
      snprintf(label, sizeof label, "%s", range);
    } else {
      snprintf(label, sizeof label, "vadd %d on %s", iteration, name);
    }
    roctxRangePushA(label);
    if (run_on(agents->gpus[g], agents->cpu, code, code_size) != 0) {
      failures++;
    } else {
      printf("c-app: vadd of %d elements verified on %s\n", N, name);
    }
    roctxRangePop();
  }
  return failures;
}

int main(int argc, char **argv) {
  int iterations = argc >= 3 ? atoi(argv[2]) : 1;
  int misuse = argc == 4 && strcmp(argv[3], "misuse") == 0;
  graph_mode = argc == 4 && strcmp(argv[3], "graph") == 0;
  if (argc < 2 || argc > 4 || iterations < 1 || (argc == 4 && !misuse && !graph_mode)) {
    fprintf(stderr, "usage: %s CODE_OBJECT [ITERATIONS [misuse|graph]]\n", argv[0]);
    return 2;
  }
  size_t code_size;
  unsigned char *code = read_file(argv[1], &code_size);
  CHECK(hsa_init());
  struct agents agents = {0};
  CHECK(hsa_iterate_agents(collect_agent, &agents));
  if (agents.gpu_count == 0 || !agents.have_cpu) {
    fprintf(stderr, "c-app: need a CPU and a GPU agent, found %d GPU(s)\n", agents.gpu_count);
    return 1;
  }
  int failures = 0;
  roctxNameOsThread("c-app main");
  roctxMarkA("start");
  roctx_range_id_t all = roctxRangeStartA("all iterations");
  for (int i = 0; i < iterations; ++i) {
    char label[32];
    snprintf(label, sizeof label, "iteration %d", i);
    roctxRangePushA(label);
    if (i % 2 == 1) {
      roctxProfilerResume(0);
    }
    failures += run_all(&agents, code, code_size, NULL, i);
    if (i % 2 == 1) {
      roctxProfilerPause(0);
    }
    roctxRangePop();
  }
  roctxRangeStop(all);
  roctxMarkA("end");
  if (misuse) {
    roctxRangePop();
    roctxRangeStop(all + 1000);
    failures += run_all(&agents, code, code_size, "bad \xff name", 0);
    roctxRangePushA("left open");
  }
  CHECK(hsa_shut_down());
  free(code);
  return failures == 0 ? 0 : 1;
}
