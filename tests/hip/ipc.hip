// IPC memory handles between two processes (tests/hip_program.rs): the parent fills device
// memory, exports it with hipIpcGetMemHandle and runs itself again as a child with the handle in
// hex; the child opens the handle, checks the parent's data, writes through it with a memset and
// a copy, and closes it; the parent then sees the child's data. Exits 0 when every check passes.
#include <hip/hip_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#define CHECK(call)                                                                \
  do {                                                                             \
    hipError_t err = (call);                                                       \
    if (err != hipSuccess) {                                                       \
      std::printf("%s failed: %s\n", #call, hipGetErrorString(err));               \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

static const unsigned N = 3000;   // words; the memset covers the first half
static const unsigned HALF = N / 2;

static unsigned parent_word(unsigned i) { return i * 7 + 1; }
static unsigned child_word(unsigned i) { return i * 13 + 5; }
static const unsigned FILL = 0xC0FFEE00u;

static int child(const char *hex) {
  hipIpcMemHandle_t handle;
  if (std::strlen(hex) != 2 * sizeof handle) {
    std::printf("child: bad handle text\n");
    return 1;
  }
  unsigned char *bytes = reinterpret_cast<unsigned char *>(&handle);
  for (size_t i = 0; i < sizeof handle; ++i) {
    unsigned byte = 0;
    std::sscanf(hex + 2 * i, "%2x", &byte);
    bytes[i] = static_cast<unsigned char>(byte);
  }
  void *mapped = nullptr;
  CHECK(hipIpcOpenMemHandle(&mapped, handle, hipIpcMemLazyEnablePeerAccess));
  unsigned *words = static_cast<unsigned *>(mapped);
  std::vector<unsigned> host(N);
  CHECK(hipMemcpy(host.data(), words, N * sizeof(unsigned), hipMemcpyDeviceToHost));
  for (unsigned i = 0; i < N; ++i) {
    if (host[i] != parent_word(i)) {
      std::printf("child: word %u is %u, the parent wrote %u\n", i, host[i], parent_word(i));
      return 1;
    }
  }
  CHECK(hipMemsetD32(words, FILL, HALF));
  for (unsigned i = HALF; i < N; ++i) host[i] = child_word(i);
  CHECK(hipMemcpy(words + HALF, host.data() + HALF, (N - HALF) * sizeof(unsigned),
                  hipMemcpyHostToDevice));
  CHECK(hipDeviceSynchronize());
  CHECK(hipIpcCloseMemHandle(mapped));
  std::printf("child: done\n");
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && std::strcmp(argv[1], "child") == 0) return child(argv[2]);

  unsigned *words = nullptr;
  CHECK(hipMalloc(&words, N * sizeof(unsigned)));
  std::vector<unsigned> host(N);
  for (unsigned i = 0; i < N; ++i) host[i] = parent_word(i);
  CHECK(hipMemcpy(words, host.data(), N * sizeof(unsigned), hipMemcpyHostToDevice));
  hipIpcMemHandle_t handle;
  CHECK(hipIpcGetMemHandle(&handle, words));

  char hex[2 * sizeof handle + 1];
  const unsigned char *bytes = reinterpret_cast<const unsigned char *>(&handle);
  for (size_t i = 0; i < sizeof handle; ++i) std::snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    execl("/proc/self/exe", argv[0], "child", hex, static_cast<char *>(nullptr));
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    std::printf("parent: the child failed\n");
    return 1;
  }

  CHECK(hipMemcpy(host.data(), words, N * sizeof(unsigned), hipMemcpyDeviceToHost));
  for (unsigned i = 0; i < N; ++i) {
    unsigned expected = i < HALF ? FILL : child_word(i);
    if (host[i] != expected) {
      std::printf("parent: word %u is %u, the child wrote %u\n", i, host[i], expected);
      return 1;
    }
  }
  CHECK(hipFree(words));
  std::printf("parent: the child's data arrived\n");
  return 0;
}
