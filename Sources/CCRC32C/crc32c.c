// CRC-32C with the CPU's own instruction: eight bytes per instruction against the
// table's one, for the checksum every log frame is checked with on every read.
// The instruction is compiled per function (target attribute), so the rest of the
// build keeps the baseline ISA and the caller asks at run time whether it exists.

#include "CCRC32C.h"
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>

int cumulus_crc32c_hardware_available(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    return (ecx & bit_SSE4_2) != 0;
}

__attribute__((target("sse4.2")))
uint32_t cumulus_crc32c_hardware(uint32_t crc, const void *bytes, size_t count) {
    const unsigned char *p = bytes;
    uint64_t wide = crc;
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        wide = __builtin_ia32_crc32di(wide, word);
        p += 8;
        count -= 8;
    }
    uint32_t narrow = (uint32_t)wide;
    while (count > 0) {
        narrow = __builtin_ia32_crc32qi(narrow, *p);
        p += 1;
        count -= 1;
    }
    return narrow;
}

#elif defined(__aarch64__) && (defined(__linux__) || defined(__APPLE__))
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

__attribute__((target("crc")))
uint32_t cumulus_crc32c_hardware(uint32_t crc, const void *bytes, size_t count) {
    const unsigned char *p = bytes;
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        crc = __builtin_arm_crc32cd(crc, word);
        p += 8;
        count -= 8;
    }
    while (count > 0) {
        crc = __builtin_arm_crc32cb(crc, *p);
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
