// The backward engine: runs a graph task on the calling thread. It counts each
// node's dependencies (edges from nodes that will run), seeds the roots'
// gradients, and runs nodes from a ready queue (latest-created first) as their
// counts reach zero, summing the gradients each node receives.
#include <tessera/autograd.h>
#include <tessera/error.h>

#include "accumulate_grad.h"
#include "autograd_meta.h"

#include <algorithm>
#include <queue>
#include <unordered_map>
#include <unordered_set>

namespace tessera::autograd {
namespace {

struct Capture {
  Node* node;
  uint32_t input_nr;
  size_t index;
};

struct ByPriority {
  bool operator()(const Node* a, const Node* b) const {
    if (a->sequence_nr() != b->sequence_nr()) return a->sequence_nr() < b->sequence_nr();
    return a < b;
  }
};

std::string shape_str(IntArrayRef s) { return detail::str(s); }

// Sums `g` down to `sizes` (undoing a broadcast); empty result if impossible.
Tensor sum_to(const Tensor& g, IntArrayRef sizes) {
  const int64_t gd = g.dim();
  const int64_t td = static_cast<int64_t>(sizes.size());
  if (gd < td) return {};
  DimVector dims;
  const int64_t lead = gd - td;
  for (int64_t i = 0; i < lead; ++i) dims.push_back(i);
  for (int64_t i = 0; i < td; ++i) {
    const int64_t gs = g.size(lead + i);
    if (gs == sizes[i]) continue;
    if (sizes[i] != 1) return {};
    dims.push_back(lead + i);
  }
  Tensor r = dims.empty() ? g : g.sum(IntArrayRef(dims.data(), dims.size()), /*keepdim=*/true);
  return r.reshape(sizes);
}

Tensor validate(Tensor g, const InputMetadata& m, const Node& producer, size_t j) {
  if (!m.differentiable) return {};
  if (!g.sizes().equals(IntArrayRef(m.sizes.data(), m.sizes.size()))) {
    Tensor r = sum_to(g, IntArrayRef(m.sizes.data(), m.sizes.size()));
    TSR_CHECK(r.defined(), AutogradError, "autograd: ", producer.name(), " returned a gradient of shape ",
              shape_str(g.sizes()), " for its input ", j, ", which has shape ",
              shape_str(IntArrayRef(m.sizes.data(), m.sizes.size())));
    g = std::move(r);
  }
  if (g.scalar_type() != m.dtype) g = g.to(m.dtype);
  if (g.device() != m.device) g = g.to(m.device);
  return g;
}

void check_anomaly(const Node& n, const variable_list& outs) {
  NoGradGuard no_grad;
  for (size_t j = 0; j < outs.size(); ++j) {
    const Tensor& g = outs[j];
    if (!g.defined() || !g.is_floating_point() || g.numel() == 0) continue;
    if (g.isnan().any().item<bool>()) {
      throw AutogradError(detail::str(
          "autograd anomaly: ", n.name(), " returned NaN in its gradient for input ", j, ". The forward call was: ",
          n.forward_call().empty() ? std::string("(not recorded: enable anomaly mode before the forward)")
                                   : n.forward_call()));
    }
  }
}

class GraphTask {
 public:
  GraphTask(bool keep_graph, bool create_graph) : keep_graph_(keep_graph), create_graph_(create_graph) {}

  // Every node reachable from the roots, in post-order: each node after all
  // its next nodes (the graph is a DAG). One iterative depth-first walk (an
  // explicit stack: chains of any length do not touch the C stack), linear in
  // nodes plus edges.
  void discover(const edge_list& roots) {
    struct Visit {
      Node* node;
      uint32_t next;  // the next edge to follow
    };
    std::vector<Visit> stack;
    state_.reserve(64);
    auto visit = [&](Node* n) {
      if (n != nullptr && state_.try_emplace(n).second) stack.push_back({n, 0});
    };
    for (const Edge& r : roots) {
      visit(r.function.get());
      while (!stack.empty()) {
        Visit& v = stack.back();
        const edge_list& edges = v.node->next_edges();
        if (v.next < edges.size()) {
          visit(edges[v.next++].function.get());  // may reallocate the stack: v is not used after
        } else {
          order_.push_back(v.node);
          stack.pop_back();
        }
      }
    }
  }

  // Which nodes run: all (plain backward), or those leading to a target
  // (grad() captures, backward(inputs=) accumulations): a node runs if it is a
  // run target or one of its next nodes is a target or runs, decided in one
  // pass over the post-order, where every next node is final before the node.
  // Then each active node's count of edges from running nodes.
  void select(bool all, const std::unordered_set<Node*>& targets, const std::unordered_set<Node*>& run_targets) {
    for (Node* t : targets)
      if (auto it = state_.find(t); it != state_.end()) it->second.target = true;
    for (Node* t : run_targets)
      if (auto it = state_.find(t); it != state_.end()) it->second.execute = true;
    for (Node* n : order_) {
      State& st = state_.find(n)->second;
      if (all) {
        st.execute = true;
        continue;
      }
      if (st.execute) continue;
      for (const Edge& e : n->next_edges()) {
        if (!e.function) continue;
        if (state_.find(e.function.get())->second.active()) {
          st.execute = true;
          break;
        }
      }
    }
    for (Node* n : order_) {
      if (!state_.find(n)->second.execute) continue;
      for (const Edge& e : n->next_edges())
        if (e.function) {
          State& c = state_.find(e.function.get())->second;
          if (c.active()) ++c.deps;
        }
    }
  }

  void seed(const Edge& root, Tensor g) {
    auto it = state_.find(root.function.get());
    if (it == state_.end() || !it->second.active()) return;
    add_to_buffer(root.function.get(), it->second, root.input_nr, std::move(g));
  }

  // Sorted by node, so a target finds its captures in O(log n) (grad() may
  // ask for many inputs).
  void set_captures(std::vector<Capture> c) {
    captures_ = std::move(c);
    std::sort(captures_.begin(), captures_.end(), [](const Capture& a, const Capture& b) { return a.node < b.node; });
  }

  std::vector<Tensor> run(size_t num_results, const std::vector<std::shared_ptr<Node>>& root_nodes) {
    std::vector<Tensor> results(num_results);
    std::priority_queue<Node*, std::vector<Node*>, ByPriority> ready;
    for (const auto& r : root_nodes) {
      State& st = state_[r.get()];
      if (st.active() && st.deps == 0 && !st.queued) {
        st.queued = true;
        ready.push(r.get());
      }
    }
    SetGradEnabledGuard grad_mode(create_graph_);
    while (!ready.empty()) {
      Node* n = ready.top();
      ready.pop();
      State& st = state_[n];
      variable_list inputs = std::move(st.buffer);
      if (inputs.size() < n->num_inputs()) inputs.resize(n->num_inputs());
      std::lock_guard<std::recursive_mutex> lock(n->mutex());
      if (n->is_accumulate_grad() || n->has_tensor_hooks())
        for (uint32_t i = 0; i < inputs.size(); ++i)
          if (inputs[i].defined()) inputs[i] = n->run_tensor_hooks(i, std::move(inputs[i]));
      if (st.target)
        for (auto c = std::lower_bound(captures_.begin(), captures_.end(), n,
                                       [](const Capture& a, const Node* b) { return a.node < b; });
             c != captures_.end() && c->node == n; ++c)
          if (c->input_nr < inputs.size()) results[c->index] = inputs[c->input_nr];
      if (!st.execute) continue;
      variable_list outs = n->apply(std::move(inputs));
      if (!keep_graph_) n->release_variables();
      if (is_anomaly_enabled()) check_anomaly(*n, outs);
      const edge_list& edges = n->next_edges();
      for (size_t j = 0; j < edges.size(); ++j) {
        Node* c = edges[j].function.get();
        if (c == nullptr) continue;
        State& cs = state_[c];
        if (!cs.active()) continue;
        if (j < outs.size() && outs[j].defined())
          add_to_buffer(c, cs, edges[j].input_nr,
                        validate(std::move(outs[j]), c->input_metadata(edges[j].input_nr), *n, j));
        if (--cs.deps == 0 && !cs.queued) {
          cs.queued = true;
          ready.push(c);
        }
      }
    }
    return results;
  }

 private:
  struct State {
    int deps = 0;
    bool execute = false;
    bool target = false;
    bool queued = false;
    variable_list buffer;  // gradients received so far, by input number
    bool active() const { return execute || target; }
  };

  static void add_to_buffer(Node* n, State& st, uint32_t input_nr, Tensor g) {
    variable_list& buf = st.buffer;
    if (buf.size() < n->num_inputs()) buf.resize(n->num_inputs());
    if (input_nr >= buf.size()) buf.resize(input_nr + 1);
    Tensor& slot = buf[input_nr];
    slot = slot.defined() ? slot + g : std::move(g);
  }

  bool keep_graph_;
  bool create_graph_;
  std::unordered_map<Node*, State> state_;
  std::vector<Node*> order_;
  std::vector<Capture> captures_;
};

// Roots and their seed gradients; AutogradError for outputs without history.
void make_roots(const char* who, const std::vector<Tensor>& outputs, const std::vector<Tensor>& grads, edge_list& roots,
                variable_list& seeds) {
  TSR_CHECK(!outputs.empty(), AutogradError, who, ": no tensors to differentiate");
  TSR_CHECK(grads.empty() || grads.size() == outputs.size(), AutogradError, who, ": got ", grads.size(),
            " gradients for ", outputs.size(), " tensors");
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& t = outputs[i];
    TSR_CHECK(t.defined(), AutogradError, who, ": tensor ", i, " is undefined");
    Edge e = gradient_edge(t);
    TSR_CHECK(e.is_valid(), AutogradError, who, ": tensor ", i,
              " does not require grad and has no grad_fn (was it computed under no_grad, or from tensors that do "
              "not require grad?)");
    Tensor g = i < grads.size() ? grads[i] : Tensor();
    if (!g.defined()) {
      TSR_CHECK(t.numel() == 1, AutogradError, who, ": a gradient can be created implicitly only for one-element "
                                                   "outputs; tensor ", i, " has shape ", shape_str(t.sizes()),
                "; pass its gradient explicitly");
      g = ones_like(t.detach());
    } else {
      TSR_CHECK(g.sizes().equals(t.sizes()), AutogradError, who, ": the gradient for tensor ", i, " has shape ",
                shape_str(g.sizes()), " but the tensor has shape ", shape_str(t.sizes()));
      TSR_CHECK(g.device() == t.device(), AutogradError, who, ": the gradient for tensor ", i, " is on ",
                g.device().str(), " but the tensor is on ", t.device().str());
      if (g.scalar_type() != t.scalar_type()) g = g.to(t.scalar_type());
    }
    roots.push_back(std::move(e));
    seeds.push_back(std::move(g));
  }
}

std::vector<std::shared_ptr<Node>> root_nodes(const edge_list& roots) {
  std::vector<std::shared_ptr<Node>> out;
  for (const Edge& e : roots) out.push_back(e.function);
  return out;
}

}  // namespace

void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors,
              std::optional<bool> retain_graph, bool create_graph, const std::vector<Tensor>& inputs) {
  edge_list roots;
  variable_list seeds;
  make_roots("backward", tensors, grad_tensors, roots, seeds);
  GraphTask task(retain_graph.value_or(create_graph), create_graph);
  task.discover(roots);
  if (inputs.empty()) {
    task.select(true, {}, {});
  } else {
    // Accumulate only into `inputs`: leaves through their AccumulateGrad
    // nodes, non-leaves into their retained .grad.
    std::unordered_set<Node*> targets, run;
    std::vector<Capture> captures;
    std::vector<std::pair<size_t, Tensor>> nonleaf;
    for (size_t i = 0; i < inputs.size(); ++i) {
      TSR_CHECK(inputs[i].defined() && inputs[i].requires_grad(), AutogradError, "backward: input ", i,
                " does not require grad");
      Edge e = gradient_edge(inputs[i]);
      targets.insert(e.function.get());
      if (inputs[i].is_leaf()) {
        run.insert(e.function.get());
      } else {
        captures.push_back({e.function.get(), e.input_nr, nonleaf.size()});
        nonleaf.emplace_back(i, inputs[i]);
      }
    }
    task.select(false, targets, run);
    task.set_captures(std::move(captures));
    for (size_t i = 0; i < roots.size(); ++i) task.seed(roots[i], std::move(seeds[i]));
    std::vector<Tensor> got = task.run(nonleaf.size(), root_nodes(roots));
    for (size_t k = 0; k < nonleaf.size(); ++k) {
      if (!got[k].defined()) continue;
      Tensor cur = nonleaf[k].second.grad();
      nonleaf[k].second.set_grad(cur.defined() ? (cur + got[k]).detach() : got[k].detach().clone());
    }
    return;
  }
  for (size_t i = 0; i < roots.size(); ++i) task.seed(roots[i], std::move(seeds[i]));
  task.run(0, root_nodes(roots));
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph, bool create_graph,
                         bool allow_unused) {
  TSR_CHECK(!inputs.empty(), AutogradError, "grad: no inputs to differentiate with respect to");
  edge_list roots;
  variable_list seeds;
  make_roots("grad", outputs, grad_outputs, roots, seeds);
  std::unordered_set<Node*> targets;
  std::vector<Capture> captures;
  std::vector<std::shared_ptr<Node>> keep;  // AccumulateGrad nodes made here must outlive the task
  for (size_t i = 0; i < inputs.size(); ++i) {
    TSR_CHECK(inputs[i].defined() && inputs[i].requires_grad(), AutogradError, "grad: input ", i,
              " does not require grad");
    Edge e = gradient_edge(inputs[i]);
    keep.push_back(e.function);
    targets.insert(e.function.get());
    captures.push_back({e.function.get(), e.input_nr, i});
  }
  GraphTask task(retain_graph.value_or(create_graph), create_graph);
  task.discover(roots);
  task.select(false, targets, {});
  task.set_captures(std::move(captures));
  for (size_t i = 0; i < roots.size(); ++i) task.seed(roots[i], std::move(seeds[i]));
  std::vector<Tensor> results = task.run(inputs.size(), root_nodes(roots));
  for (size_t i = 0; i < results.size(); ++i) {
    TSR_CHECK(results[i].defined() || allow_unused, AutogradError, "grad: input ", i,
              " was not used to compute the outputs (or its gradient is always zero and undefined); pass "
              "allow_unused=true to get an undefined tensor for it");
    if (results[i].defined() && !create_graph) results[i] = results[i].detach();
  }
  return results;
}

}  // namespace tessera::autograd
