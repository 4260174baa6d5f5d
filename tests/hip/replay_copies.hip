// Copies beside kernels, for kernel replay (tests/hip_program.rs): stream 0 runs memsets (HIP's
// fill kernels) again and again on one device buffer while stream 1 copies pinned host data to a
// second device buffer and back with hipMemcpyAsync (and hipMemcpy2DAsync), the host checking
// every byte as soon as hipStreamSynchronize returns. Nothing orders the two streams. Each round
// copies from and to pinned buffers of its own, written by the host before the first round, so
// that every byte changed while the streams run is changed by a copy or a memset. Exits with the
// status given as its argument when every check passes, 1 otherwise.
#include <hip/hip_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                \
  do {                                                                             \
    hipError_t err = (call);                                                       \
    if (err != hipSuccess) {                                                       \
      std::printf("%s failed: %s\n", #call, hipGetErrorString(err));               \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

static unsigned char pattern(unsigned round, unsigned i) {
  return static_cast<unsigned char>(round * 7 + i * 13 + 1);
}

int main(int argc, char **argv) {
  const int status = argc > 1 ? std::atoi(argv[1]) : 0;
  const unsigned rounds = argc > 2 ? std::atoi(argv[2]) : 100;
  const unsigned width = 256, rows = 64, bytes = width * rows, pitch = 384;

  hipStream_t kernels, copies;
  CHECK(hipStreamCreate(&kernels));
  CHECK(hipStreamCreate(&copies));
  unsigned char *host_in, *host_out, *filled, *device, *pitched;
  CHECK(hipHostMalloc(&host_in, size_t(bytes) * rounds));
  CHECK(hipHostMalloc(&host_out, size_t(bytes) * rounds));
  for (unsigned round = 0; round < rounds; ++round)
    for (unsigned i = 0; i < bytes; ++i)
      host_in[size_t(round) * bytes + i] = pattern(round, i), host_out[size_t(round) * bytes + i] = 0;
  CHECK(hipMalloc(&filled, bytes));
  CHECK(hipMalloc(&device, bytes));
  CHECK(hipMalloc(&pitched, pitch * rows));

  int failures = 0;
  unsigned trips = 0;
  for (unsigned round = 0; round < rounds && failures == 0; ++round) {
    // Two memsets queued on stream 0, then a copy round trip on stream 1 beside them.
    CHECK(hipMemsetAsync(filled, round & 0xff, bytes, kernels));
    CHECK(hipMemsetAsync(filled, (round + 1) & 0xff, bytes / 2, kernels));
    unsigned char *in = host_in + size_t(round) * bytes, *out = host_out + size_t(round) * bytes;
    const bool rect = round % 2 == 1;
    if (rect) {
      CHECK(hipMemcpy2DAsync(pitched, pitch, in, width, width, rows, hipMemcpyHostToDevice,
                             copies));
      CHECK(hipMemcpy2DAsync(out, width, pitched, pitch, width, rows, hipMemcpyDeviceToHost,
                             copies));
    } else {
      CHECK(hipMemcpyAsync(device, in, bytes, hipMemcpyHostToDevice, copies));
      CHECK(hipMemcpyAsync(out, device, bytes, hipMemcpyDeviceToHost, copies));
    }
    CHECK(hipStreamSynchronize(copies));
    for (unsigned i = 0; i < bytes; ++i) {
      if (out[i] != pattern(round, i)) {
        std::printf("wrong: %s round trip %u: byte %u is 0x%02x, expected 0x%02x\n",
                    rect ? "hipMemcpy2DAsync" : "hipMemcpyAsync", round, i, out[i],
                    pattern(round, i));
        ++failures;
        break;
      }
    }
    ++trips;
  }
  CHECK(hipStreamSynchronize(kernels));
  // The last memsets' result, read back.
  std::vector<unsigned char> last(bytes);
  CHECK(hipMemcpy(last.data(), filled, bytes, hipMemcpyDeviceToHost));
  const unsigned r = rounds - 1;
  for (unsigned i = 0; i < bytes && failures == 0; ++i) {
    const unsigned char want = static_cast<unsigned char>(i < bytes / 2 ? r + 1 : r);
    if (last[i] != want) {
      std::printf("wrong: memsets: byte %u is 0x%02x, expected 0x%02x\n", i, last[i], want);
      ++failures;
    }
  }
  std::printf("%u copy round trips and %u memsets checked\n", trips, 2 * rounds);
  CHECK(hipHostFree(host_in));
  CHECK(hipHostFree(host_out));
  CHECK(hipFree(filled));
  CHECK(hipFree(device));
  CHECK(hipFree(pitched));
  CHECK(hipStreamDestroy(kernels));
  CHECK(hipStreamDestroy(copies));
  return failures == 0 ? status : 1;
}
