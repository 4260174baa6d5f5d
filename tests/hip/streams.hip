// A small HIP program for the simulated GPU (tests/hip_program.rs): three streams (one with a
// priority), events, hipMemset, hipMemcpyAsync in every direction, device-to-device copies (also
// 2D) and two kernels. It checks what every GPU must produce, memsets and copies, and prints
// what the kernels left; it exits with the status given as its argument when every check
// passes, 1 otherwise.
#include <hip/hip_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(call)                                                                \
  do {                                                                             \
    hipError_t err = (call);                                                       \
    if (err != hipSuccess) {                                                       \
      std::printf("%s failed: %s\n", #call, hipGetErrorString(err));               \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

// Named and laid out like the simulator's fixture kernel vadd, but subtracting.
extern "C" __global__ void vadd(const float *a, const float *b, float *c, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] - b[i];
}

__global__ void scale(unsigned *data, unsigned factor, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}

static int failures = 0;

static void expect(bool ok, const char *what) {
  if (!ok) {
    std::printf("wrong: %s\n", what);
    ++failures;
  }
}

int main(int argc, char **argv) {
  const int status = argc > 1 ? std::atoi(argv[1]) : 0;
  const unsigned n = 4096, bytes = n * sizeof(unsigned);
  const unsigned blocks = (n + 255) / 256;

  // Stream 2 with the highest priority (a hint).
  hipStream_t streams[3];
  int least = 0, greatest = 0;
  CHECK(hipDeviceGetStreamPriorityRange(&least, &greatest));
  CHECK(hipStreamCreate(&streams[0]));
  CHECK(hipStreamCreate(&streams[1]));
  CHECK(hipStreamCreateWithPriority(&streams[2], hipStreamDefault, greatest));
  hipEvent_t start, copied, done;
  CHECK(hipEventCreate(&start));
  CHECK(hipEventCreate(&copied));
  CHECK(hipEventCreate(&done));

  unsigned *in, *out_x, *out_y, *out_z;
  CHECK(hipHostMalloc(&in, bytes));
  CHECK(hipHostMalloc(&out_x, bytes));
  CHECK(hipHostMalloc(&out_y, bytes));
  CHECK(hipHostMalloc(&out_z, bytes));
  for (unsigned i = 0; i < n; ++i) in[i] = 7 * i + 1;
  unsigned *x, *y, *z;
  CHECK(hipMalloc(&x, bytes));
  CHECK(hipMalloc(&y, bytes));
  CHECK(hipMalloc(&z, bytes));

  // A synchronous memset, read back at once.
  CHECK(hipMemset(x, 0x11, bytes));
  CHECK(hipMemcpy(out_x, x, bytes, hipMemcpyDeviceToHost));
  bool all = true;
  for (unsigned i = 0; i < n; ++i) all &= out_x[i] == 0x11111111u;
  expect(all, "hipMemset");

  // Stream 0: upload and scale x; stream 1, after the event: fill y, copy x into y at a word
  // offset and 101 bytes of x at an odd byte offset, read y back; z filled with 32-bit words.
  CHECK(hipMemsetAsync(y, 0x22, bytes, streams[1]));
  CHECK(hipMemsetD32Async(reinterpret_cast<hipDeviceptr_t>(z), 0xdeadbeef, n, streams[2]));
  CHECK(hipEventRecord(start, streams[0]));
  CHECK(hipMemcpyAsync(x, in, bytes, hipMemcpyHostToDevice, streams[0]));
  hipLaunchKernelGGL(scale, dim3(blocks), dim3(256), 0, streams[0], x, 3u, n);
  CHECK(hipGetLastError());
  CHECK(hipEventRecord(copied, streams[0]));
  CHECK(hipStreamWaitEvent(streams[1], copied, 0));
  CHECK(hipMemcpyAsync(y + 16, x, bytes / 2, hipMemcpyDeviceToDevice, streams[1]));
  CHECK(hipMemcpyAsync(reinterpret_cast<char *>(y) + 3 * bytes / 4 + 1, x, 101,
                       hipMemcpyDeviceToDevice, streams[1]));
  CHECK(hipMemcpyAsync(out_y, y, bytes, hipMemcpyDeviceToHost, streams[1]));
  CHECK(hipEventRecord(done, streams[1]));
  CHECK(hipMemcpyAsync(out_z, z, bytes, hipMemcpyDeviceToHost, streams[2]));
  CHECK(hipEventSynchronize(done));
  CHECK(hipStreamSynchronize(streams[2]));
  CHECK(hipMemcpy(out_x, x, bytes, hipMemcpyDeviceToHost));

  // y is what x held after the scale kernel, whatever that computed.
  std::vector<unsigned char> want(bytes);
  std::memset(want.data(), 0x22, bytes);
  std::memcpy(want.data() + 64, out_x, bytes / 2);
  std::memcpy(want.data() + 3 * bytes / 4 + 1, out_x, 101);
  expect(std::memcmp(out_y, want.data(), bytes) == 0, "device-to-device copies");
  all = true;
  for (unsigned i = 0; i < n; ++i) all &= out_z[i] == 0xdeadbeefu;
  expect(all, "hipMemsetD32Async");
  float elapsed = -1;
  CHECK(hipEventElapsedTime(&elapsed, start, done));
  expect(elapsed > 0, "elapsed time between events");
  bool scaled = true;
  for (unsigned i = 0; i < n; ++i) scaled &= out_x[i] == 3 * in[i];
  std::printf("scale: %s\n", scaled ? "computed" : "not computed");

  // 2D between device buffers: 8 rows of 200 bytes of y (pitch 256) set to 0x33, 8 rows of 100
  // bytes of x (pitch 256) copied into z (pitch 128); the rest of each row keeps its bytes.
  CHECK(hipMemset2DAsync(y, 256, 0x33, 200, 8, streams[2]));
  CHECK(hipMemcpy2DAsync(z, 128, x, 256, 100, 8, hipMemcpyDeviceToDevice, streams[2]));
  CHECK(hipStreamSynchronize(streams[2]));
  std::vector<unsigned char> y2(bytes), z2(bytes);
  CHECK(hipMemcpy(y2.data(), y, bytes, hipMemcpyDeviceToHost));
  CHECK(hipMemcpy(z2.data(), z, bytes, hipMemcpyDeviceToHost));
  std::memset(want.data(), 0, bytes);
  std::memcpy(want.data(), out_y, bytes);
  for (unsigned row = 0; row < 8; ++row) std::memset(want.data() + 256 * row, 0x33, 200);
  expect(std::memcmp(y2.data(), want.data(), bytes) == 0, "hipMemset2DAsync");
  std::memcpy(want.data(), out_z, bytes);
  for (unsigned row = 0; row < 8; ++row)
    std::memcpy(want.data() + 128 * row, reinterpret_cast<unsigned char *>(out_x) + 256 * row, 100);
  expect(std::memcmp(z2.data(), want.data(), bytes) == 0, "hipMemcpy2DAsync device to device");

  // vadd: subtracts on a GPU; must never add.
  std::vector<float> a(n), b(n), c(n);
  for (unsigned i = 0; i < n; ++i) a[i] = 2.0f * i, b[i] = 0.5f * i;
  float *fa, *fb, *fc;
  CHECK(hipMalloc(&fa, bytes));
  CHECK(hipMalloc(&fb, bytes));
  CHECK(hipMalloc(&fc, bytes));
  CHECK(hipMemcpyAsync(fa, a.data(), bytes, hipMemcpyHostToDevice, streams[2]));
  CHECK(hipMemcpyAsync(fb, b.data(), bytes, hipMemcpyHostToDevice, streams[2]));
  CHECK(hipMemsetAsync(fc, 0, bytes, streams[2]));
  hipLaunchKernelGGL(vadd, dim3(blocks), dim3(256), 0, streams[2], fa, fb, fc, n);
  CHECK(hipGetLastError());
  CHECK(hipMemcpyAsync(c.data(), fc, bytes, hipMemcpyDeviceToHost, streams[2]));
  CHECK(hipStreamSynchronize(streams[2]));
  bool difference = true, sum = true, untouched = true;
  for (unsigned i = 1; i < n; ++i) {
    difference &= c[i] == a[i] - b[i];
    sum &= c[i] == a[i] + b[i];
    untouched &= c[i] == 0.0f;
  }
  expect(!sum, "vadd added");
  std::printf("vadd: %s\n", difference ? "computed" : untouched ? "not computed" : "garbage");

  for (auto s : streams) CHECK(hipStreamDestroy(s));
  for (auto e : {start, copied, done}) CHECK(hipEventDestroy(e));
  for (void *p : {static_cast<void *>(x), static_cast<void *>(y), static_cast<void *>(z),
                  static_cast<void *>(fa), static_cast<void *>(fb), static_cast<void *>(fc)})
    CHECK(hipFree(p));
  for (void *p : {in, out_x, out_y, out_z}) CHECK(hipHostFree(p));
  if (failures) return 1;
  std::printf("checks passed\n");
  return status;
}
