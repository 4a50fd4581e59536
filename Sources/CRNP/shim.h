// RNP, the OpenPGP library Debian packages (librnp-dev): only IssuerdOpenPGP imports it.
#include <rnp/rnp.h>
#include <rnp/rnp_err.h>
