/*
 * Writes N kernel dispatches (argument, default 1) sharing one completion signal that starts at
 * N + 1, rings the doorbell once, waits until every dispatch completed it, and prints the signal's
 * value a moment later (1 if each dispatch decremented it exactly once) and the dispatch times
 * the runtime reads from that signal: "value start end".
 *
 *   cc signal_app.c -I/usr/include/hsa -lhsa-runtime64 -o signal_app
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hsa.h>
#include <hsa_ext_amd.h>

#define APP_NAME "signal-app"
#include "hsa_app.h"

int main(int argc, char **argv) {
  int count = argc > 1 ? atoi(argv[1]) : 1;
  CHECK(hsa_init());
  hsa_agent_t gpu = {0};
  CHECK(hsa_iterate_agents(first_gpu, &gpu));
  hsa_queue_t *queue;
  CHECK(hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_SINGLE, NULL, NULL, UINT32_MAX, UINT32_MAX, &queue));
  hsa_signal_t done;
  CHECK(hsa_signal_create(count + 1, 0, NULL, &done));
  uint64_t first = hsa_queue_add_write_index_relaxed(queue, count);
  uint64_t index = first;
  for (int i = 0; i < count; i++, index++) {
  hsa_kernel_dispatch_packet_t *packet =
      (hsa_kernel_dispatch_packet_t *)queue->base_address + (index & (queue->size - 1));
  memset((uint8_t *)packet + 4, 0, sizeof(*packet) - 4);
  packet->workgroup_size_x = 64;
  packet->workgroup_size_y = 1;
  packet->workgroup_size_z = 1;
  packet->grid_size_x = 1 << 20;
  packet->grid_size_y = 1;
  packet->grid_size_z = 1;
  packet->kernel_object = 0x1000;
  packet->completion_signal = done;
  uint16_t header = (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
                    (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                    (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
  __atomic_store_n((uint32_t *)packet, header | (1u << 16), __ATOMIC_RELEASE);
  }
  hsa_signal_store_screlease(queue->doorbell_signal, (hsa_signal_value_t)(index - 1));
  while (hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 2, UINT64_MAX,
                                   HSA_WAIT_STATE_BLOCKED) >= 2) {
  }
  usleep(100000);
  hsa_amd_profiling_dispatch_time_t time;
  CHECK(hsa_amd_profiling_get_dispatch_time(gpu, done, &time));
  printf("%ld %lu %lu\n", (long)hsa_signal_load_relaxed(done), (unsigned long)time.start,
         (unsigned long)time.end);
  CHECK(hsa_signal_destroy(done));
  CHECK(hsa_queue_destroy(queue));
  CHECK(hsa_shut_down());
  return 0;
}
