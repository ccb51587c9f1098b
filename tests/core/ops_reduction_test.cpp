// C++ tests of the reduction ops: behaviour and error messages beyond the NumPy oracle.
#include <gtest/gtest.h>
#include <tessera/tessera.h>
