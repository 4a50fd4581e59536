#ifndef ISSUERD_CPKCS11_SHIM_H
#define ISSUERD_CPKCS11_SHIM_H

// The PKCS#11 (Cryptoki) 2.40 interface from Debian's libp11-kit-dev. Only the header is used:
// nothing links against p11-kit; the vendor module (SoftHSM2, Luna, nShield, CloudHSM) is loaded
// at run time with dlopen and entered through its C_GetFunctionList.
// The path is absolute because p11-kit installs it outside the default include path
// (pkg-config p11-kit-1 adds -I/usr/include/p11-kit-1, which also pulls in -lp11-kit).
#include "/usr/include/p11-kit-1/p11-kit/pkcs11.h"
#include <dlfcn.h>

/// dlopen + dlsym("C_GetFunctionList") + the call. Returns the handle or NULL (then `*rv` is
/// CKR_GENERAL_ERROR and `dlerror()` says why); the function list through `list`.
static inline void *issuerd_pkcs11_load(const char *path, CK_FUNCTION_LIST_PTR *list, CK_RV *rv) {
    *list = NULL;
    *rv = CKR_GENERAL_ERROR;
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) return NULL;
    CK_C_GetFunctionList get = (CK_C_GetFunctionList)dlsym(handle, "C_GetFunctionList");
    if (get == NULL) { *rv = CKR_FUNCTION_NOT_SUPPORTED; return handle; }
    *rv = get(list);
    return handle;
}

/// The last dlopen/dlsym failure, or NULL.
static inline const char *issuerd_pkcs11_dlerror(void) { return dlerror(); }

/// Closes a handle from issuerd_pkcs11_load.
static inline void issuerd_pkcs11_unload(void *handle) { if (handle != NULL) dlclose(handle); }

#endif
