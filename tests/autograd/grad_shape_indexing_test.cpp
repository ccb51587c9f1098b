// Gradients of the shape and indexing ops: gradcheck (finite differences in float64)
// on every differentiable op, gradgradcheck where docs/autograd.md says, and
// the not-differentiable ops' outputs never requiring grad.
#include <tessera/autograd.h>
#include <tessera/autograd/gradcheck.h>
#include <tessera/tessera.h>

#include <gtest/gtest.h>
