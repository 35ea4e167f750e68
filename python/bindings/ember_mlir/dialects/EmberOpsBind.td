#ifndef EMBER_PYTHON_OPS_TD
#define EMBER_PYTHON_OPS_TD
include "EmberOps.td"
#endif
