#ifndef ISSUERD_COPENSSL_SHIM_H
#define ISSUERD_COPENSSL_SHIM_H
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/obj_mac.h>
#include <openssl/objects.h>
#include <openssl/param_build.h>
#include <openssl/params.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/x509_vfy.h>

/* OpenSSL's table of multiples of a group's generator, built for a group whose generator is a
 * recipient's public key (ECCV2 ECDH with a fixed recipient). Deprecated in 3.0 with the rest of
 * the low-level precomputation calls, still built and tested there; wrapped so the deprecation
 * stays here, in one place. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static inline int issuerd_EC_GROUP_precompute_mult(EC_GROUP *group, BN_CTX *ctx) {
    return EC_GROUP_precompute_mult(group, ctx);
}
#pragma GCC diagnostic pop
#endif
