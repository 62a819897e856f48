#ifndef CUMULUS_CLMDB_SHIM_H
#define CUMULUS_CLMDB_SHIM_H
#include <lmdb.h>
#endif
