// Forwarding header: running host programs from the CLI lives in
// clients/lazaret/process/subprocess.h.
#ifndef LAZARET_CLIENTS_LAZARET_SUBPROCESS_H_
#define LAZARET_CLIENTS_LAZARET_SUBPROCESS_H_

#include "clients/lazaret/process/subprocess.h"  // IWYU pragma: export

#endif  // LAZARET_CLIENTS_LAZARET_SUBPROCESS_H_
