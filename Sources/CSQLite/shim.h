#ifndef CUMULUS_CSQLITE_SHIM_H
#define CUMULUS_CSQLITE_SHIM_H
// SQLite is used only by the benchmarks, as the baseline Cumulus is measured against.
#include <sqlite3.h>
#endif
