#ifndef CUMULUS_CCRC32C_H
#define CUMULUS_CCRC32C_H

#include <stddef.h>
#include <stdint.h>

/// Whether this CPU has a CRC-32C instruction (SSE4.2 on x86-64, the CRC extension
/// on AArch64). Asked once; the answer does not change while the process runs.
int cumulus_crc32c_hardware_available(void);

/// Continues a CRC-32C over `count` bytes at `bytes` with the CPU's instruction.
/// `crc` is the running register (start with 0xFFFFFFFF, invert the result); only
/// call it when cumulus_crc32c_hardware_available() returned non-zero.
uint32_t cumulus_crc32c_hardware(uint32_t crc, const void *bytes, size_t count);

#endif
