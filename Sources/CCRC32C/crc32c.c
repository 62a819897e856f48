// CRC-32C with the CPU's own instruction: eight bytes per instruction against the
// table's one, for the checksum every log frame is checked with on every read.
// The instruction is compiled per function (target attribute), so the rest of the
// build keeps the baseline ISA and the caller asks at run time whether it exists.
// Each architecture names its two steps (eight bytes, one byte); the loop is shared.

#include "CCRC32C.h"
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#define HAS_CRC_INSTRUCTION 1
#define CRC_TARGET __attribute__((target("sse4.2")))

int cumulus_crc32c_hardware_available(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    return (ecx & bit_SSE4_2) != 0;
}

static inline CRC_TARGET uint32_t step8(uint32_t crc, uint64_t word) {
    return (uint32_t)__builtin_ia32_crc32di(crc, word);
}

static inline CRC_TARGET uint32_t step1(uint32_t crc, unsigned char byte) {
    return __builtin_ia32_crc32qi(crc, byte);
}

#elif defined(__aarch64__) && (defined(__linux__) || defined(__APPLE__))
#define HAS_CRC_INSTRUCTION 1
#define CRC_TARGET __attribute__((target("crc")))

#if defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif

int cumulus_crc32c_hardware_available(void) {
    return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
}
#else
// Every Apple arm64 CPU implements the CRC extension.
int cumulus_crc32c_hardware_available(void) { return 1; }
#endif

static inline CRC_TARGET uint32_t step8(uint32_t crc, uint64_t word) {
    return __builtin_arm_crc32cd(crc, word);
}

static inline CRC_TARGET uint32_t step1(uint32_t crc, unsigned char byte) {
    return __builtin_arm_crc32cb(crc, byte);
}

#endif

#if defined(HAS_CRC_INSTRUCTION)

CRC_TARGET uint32_t cumulus_crc32c_hardware(uint32_t crc, const void *bytes, size_t count) {
    const unsigned char *p = bytes;
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);  // unaligned-safe load
        crc = step8(crc, word);
        p += 8;
        count -= 8;
    }
    while (count > 0) {
        crc = step1(crc, *p);
        p += 1;
        count -= 1;
    }
    return crc;
}

#else

int cumulus_crc32c_hardware_available(void) { return 0; }

uint32_t cumulus_crc32c_hardware(uint32_t crc, const void *bytes, size_t count) {
    (void)bytes;
    (void)count;
    return crc;
}

#endif
