/*
 * What the HSA test programs of this directory share: CHECK, which ends the program naming a
 * call that failed, and first_gpu, an agent iterator keeping the first GPU. Define APP_NAME (the
 * prefix of the program's messages) before including.
 */
#ifndef RTL_TESTS_HSA_APP_H
#define RTL_TESTS_HSA_APP_H

#include <stdio.h>
#include <stdlib.h>

#include <hsa.h>

#define CHECK(call)                                                                   \
  do {                                                                                \
    hsa_status_t status_ = (call);                                                    \
    if (status_ != HSA_STATUS_SUCCESS && status_ != HSA_STATUS_INFO_BREAK) {          \
      fprintf(stderr, APP_NAME ": %s failed with status 0x%x\n", #call, status_);     \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

static hsa_status_t first_gpu(hsa_agent_t agent, void *data) {
  hsa_device_type_t type;
  CHECK(hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type));
  if (type == HSA_DEVICE_TYPE_GPU) {
    *(hsa_agent_t *)data = agent;
    return HSA_STATUS_INFO_BREAK;
  }
  return HSA_STATUS_SUCCESS;
}

#endif
