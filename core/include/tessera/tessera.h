// tessera/tessera.h — the whole C++ API.
#pragma once

#include <tessera/device.h>
#include <tessera/autograd.h>
#include <tessera/autograd/function.h>
#include <tessera/autograd/gradcheck.h>
#include <tessera/dispatcher.h>
#include <tessera/dlpack.h>
#include <tessera/dtype.h>
#include <tessera/error.h>
#include <tessera/nn.h>
#include <tessera/optim.h>
#include <tessera/plugin.h>
#include <tessera/scalar.h>
#include <tessera/serialize.h>
#include <tessera/tensor.h>
