/*
 * Dispatches COUNT kernels (argument 1), one doorbell each, all sharing one completion signal
 * that starts at COUNT, waits until every one completed it, prints "end-app: COUNT dispatches
 * completed" and ends as MODE (argument 2) says, right away:
 *   exit-thread   _exit(0) from a new thread
 *   segv, abort   a store to an unmapped address, abort()
 *   return        returning from main after hsa_shut_down
 * With a third argument `handler`, a SIGSEGV/SIGABRT handler of its own, installed before
 * hsa_init, says "end-app: own handler caught signal N" and ends the process with the signal.
 *
 *   cc end_app.c -I/usr/include/hsa -lhsa-runtime64 -lpthread -o end_app
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hsa.h>
#include <hsa_ext_amd.h>

#define APP_NAME "end-app"
#include "hsa_app.h"

static void own_handler(int signal_number) {
  char message[64];
  int n = snprintf(message, sizeof message, "end-app: own handler caught signal %d\n", signal_number);
  write(2, message, (size_t)n);
  signal(signal_number, SIG_DFL);
  raise(signal_number);
}

static void *exit_now(void *unused) {
  (void)unused;
  _exit(0);
  return NULL;
}

int main(int argc, char **argv) {
  int count = argc > 1 ? atoi(argv[1]) : 1;
  const char *mode = argc > 2 ? argv[2] : "return";
  if (argc > 3 && strcmp(argv[3], "handler") == 0) {
    signal(SIGSEGV, own_handler);
    signal(SIGABRT, own_handler);
  }
  CHECK(hsa_init());
  hsa_agent_t gpu = {0};
  CHECK(hsa_iterate_agents(first_gpu, &gpu));
  hsa_queue_t *queue;
  CHECK(hsa_queue_create(gpu, 64, HSA_QUEUE_TYPE_SINGLE, NULL, NULL, UINT32_MAX, UINT32_MAX, &queue));
  hsa_signal_t done;
  CHECK(hsa_signal_create(count, 0, NULL, &done));
  for (int i = 0; i < count; i++) {
    uint64_t index = hsa_queue_add_write_index_relaxed(queue, 1);
    while (index - hsa_queue_load_read_index_scacquire(queue) >= queue->size) {
    }
    hsa_kernel_dispatch_packet_t *packet =
        (hsa_kernel_dispatch_packet_t *)queue->base_address + (index & (queue->size - 1));
    memset((uint8_t *)packet + 4, 0, sizeof(*packet) - 4);
    packet->workgroup_size_x = 64;
    packet->workgroup_size_y = 1;
    packet->workgroup_size_z = 1;
    packet->grid_size_x = 4096;
    packet->grid_size_y = 1;
    packet->grid_size_z = 1;
    packet->kernel_object = 0x1000;
    packet->completion_signal = done;
    uint16_t header = (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
                      (1 << HSA_PACKET_HEADER_BARRIER) |
                      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
    __atomic_store_n((uint32_t *)packet, header | (1u << 16), __ATOMIC_RELEASE);
    hsa_signal_store_screlease(queue->doorbell_signal, (hsa_signal_value_t)index);
  }
  while (hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1, UINT64_MAX,
                                   HSA_WAIT_STATE_BLOCKED) >= 1) {
  }
  printf("end-app: %d dispatches completed\n", count);
  fflush(stdout);
  if (strcmp(mode, "exit-thread") == 0) {
    pthread_t thread;
    pthread_create(&thread, NULL, exit_now, NULL);
    pthread_join(thread, NULL);
  } else if (strcmp(mode, "segv") == 0) {
    *(volatile int *)8 = 1;
  } else if (strcmp(mode, "abort") == 0) {
    abort();
  }
  CHECK(hsa_signal_destroy(done));
  CHECK(hsa_queue_destroy(queue));
  CHECK(hsa_shut_down());
  return 0;
}
