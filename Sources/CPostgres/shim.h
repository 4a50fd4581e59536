#ifndef ISSUERD_CPOSTGRES_SHIM_H
#define ISSUERD_CPOSTGRES_SHIM_H
#include <postgresql/libpq-fe.h>
#endif
