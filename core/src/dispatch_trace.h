// Internal: the dispatch trace switch (TESSERA_DISPATCH_TRACE,
// Dispatcher::set_trace), owned by dispatcher.cpp and read inline on the hot
// paths that bypass Dispatcher::call (the pointwise lane, structured calls).
#pragma once

namespace tessera {

/// Dispatcher::trace_enabled(). Written only by Dispatcher::set_trace.
extern bool g_dispatch_trace;

}  // namespace tessera
