// C++ tests of the nn ops: behaviour and error messages beyond the NumPy oracle.
#include <gtest/gtest.h>
#include <tessera/tessera.h>
