#ifndef CUMULUS_CZSTD_SHIM_H
#define CUMULUS_CZSTD_SHIM_H
// ZSTD_STATIC_LINKING_ONLY is not defined: only the stable API is used, so the
// project builds against any libzstd >= 1.4 that Debian ships.
#include <zstd.h>
#include <zdict.h>
#include <zstd_errors.h>
#endif
