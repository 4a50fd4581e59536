#ifndef ISSUERD_CMICROHTTPD_SHIM_H
#define ISSUERD_CMICROHTTPD_SHIM_H
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <microhttpd.h>

/* MHD_get_connection_info is variadic, and Swift does not import variadic C functions.
   This fixes the one query the server makes: the peer address, for access logs. */
static inline const struct sockaddr *issuerd_mhd_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}
#endif
