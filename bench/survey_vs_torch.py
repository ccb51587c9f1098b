"""Ops outside bench_vs_torch.py's sweep against PyTorch: a survey for
outliers (issue 19). Tessera and PyTorch alternate in one process on the same
NumPy data, five rounds of n calls each (n sized to ~50 ms), and each line
prints the median ratio Tessera time / PyTorch time and PyTorch's time. No
result checks: the op tests cover correctness; this only looks for slow
kernels. Thread count: OMP_NUM_THREADS for Tessera, the same for PyTorch.

    OMP_NUM_THREADS=1 PYTHONPATH=build/release/python TESSERA_PLUGIN_PATH=build/release/lib/tessera/plugins \
      .venv-torch/bin/python bench/survey_vs_torch.py
"""
import os
import statistics as st
import time

# As bench_vs_torch.py: idle OpenMP workers sleep, the thread count is fixed.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
os.environ.setdefault("TESSERA_CPU_LOAD_AWARE", "0")

import numpy as np  # noqa: E402
import tessera as T  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
rng=np.random.default_rng(0)
def both(a): return T.from_dlpack(a.copy()), torch.from_numpy(a.copy())
x,xt=both(rng.standard_normal(1<<20).astype(np.float32))
m,mt=both(rng.standard_normal((1024,1024)).astype(np.float32))
m64,m64t=both(rng.standard_normal((1024,1024)))
v,vt=both(rng.standard_normal(1<<16).astype(np.float32))
i32,i32t=both(rng.integers(-1000,1000,1<<20).astype(np.int32))
im,imt=both(rng.standard_normal((8,32,64,64)).astype(np.float32))
u,ut=both(rng.uniform(-0.9,0.9,1<<20).astype(np.float32))  # inside acos/asin's domain
pos,post=both(rng.uniform(0.1,3,1<<20).astype(np.float32))  # positive
bl,blt=both(rng.integers(0,2,1<<20).astype(np.bool_))
idx,idxt=both(rng.integers(0,1<<20,1<<16).astype(np.int64))
lab,labt=both(rng.integers(0,10,1<<16).astype(np.int64))
w,wt=both(rng.standard_normal(1024).astype(np.float32))
h,ht=both(rng.standard_normal(1<<20).astype(np.float16))
F=torch.nn.functional
cases=[
 ("cumsum dim=1 1024^2", lambda: T.cumsum(m,1), lambda: torch.cumsum(mt,1)),
 ("cumsum dim=0 1024^2", lambda: T.cumsum(m,0), lambda: torch.cumsum(mt,0)),
 ("argmax dim=0 1024^2", lambda: T.argmax(m,0), lambda: torch.argmax(mt,0)),
 ("softmax dim=0 1024^2", lambda: T.softmax(m,0), lambda: torch.softmax(mt,0)),
 ("logsumexp dim=0 1024^2", lambda: T.logsumexp(m,0), lambda: torch.logsumexp(mt,0)),
 ("std dim=1 1024^2", lambda: T.std(m,1), lambda: torch.std(mt,1)),
 ("float64 sum dim=1", lambda: m64.sum(1), lambda: m64t.sum(1)),
 ("float64 exp 1M", lambda: m64.exp(), lambda: m64t.exp()),
 ("float64 mm 512", lambda: T.mm(m64[:512,:512],m64[:512,:512]), lambda: torch.mm(m64t[:512,:512],m64t[:512,:512])),
 ("int32 add 1M", lambda: i32+i32, lambda: i32t+i32t),
 ("int32 sum", lambda: i32.sum(), lambda: i32t.sum()),
 ("tanh 1M", lambda: x.tanh(), lambda: xt.tanh()),
 ("log 1M (abs)", lambda: T.abs(x).log(), lambda: xt.abs().log()),
 ("x*2+1 1M", lambda: x*2+1, lambda: xt*2+1),
 ("broadcast add 1024^2 + row", lambda: m+m[0], lambda: mt+mt[0]),
 ("transposed add 1024^2", lambda: m+m.t(), lambda: mt+mt.t()),
 ("max_pool2d 3x3 s2 8x32x64^2", lambda: T.max_pool2d(im,3,2,1), lambda: torch.nn.functional.max_pool2d(imt,3,2,1)),
 ("conv2d 32->32 s2 8x64^2", lambda: T.conv2d(im,T.from_dlpack(np.ones((32,32,3,3),np.float32)),None,2,1), lambda: torch.nn.functional.conv2d(imt,torch.ones(32,32,3,3),None,2,1)),
 ("nonzero 1M", lambda: T.nonzero(x>0), lambda: torch.nonzero(xt>0)),
 ("masked_select 1M", lambda: T.masked_select(x, x>0), lambda: torch.masked_select(xt, xt>0)),
 ("where scalar 1M", lambda: T.where(x>0, x, 0.0), lambda: torch.where(xt>0, xt, 0.0)),
 ("clone transposed 1024^2", lambda: m.t().contiguous(), lambda: mt.t().contiguous()),
 ("matmul batch-broadcast 16x128x128 @ 128x128", lambda: T.matmul(im.reshape(64,128,128)[:16], m[:128,:128]), lambda: torch.matmul(imt.reshape(64,128,128)[:16], mt[:128,:128])),
 ("argmin dim=0 1024^2", lambda: T.argmin(m,0), lambda: torch.argmin(mt,0)),
 ("max dim=1 values+idx", lambda: m.max(1), lambda: mt.max(1)),
 ("prod dim=0 1024^2", lambda: m.prod(0), lambda: mt.prod(0)),
 ("var dim=1 1024^2", lambda: T.var(m,1), lambda: torch.var(mt,1)),
 ("mean dim=0 1024^2", lambda: m.mean(0), lambda: mt.mean(0)),
 ("norm dim=0 1024^2", lambda: T.norm(m,2,0), lambda: torch.norm(mt,2,0)),
 ("any dim=0 bool 1024^2", lambda: (m>0).any(0), lambda: (mt>0).any(0)),
 ("eq 1M", lambda: x==x, lambda: xt==xt),
 ("lt scalar 1M", lambda: x<0.5, lambda: xt<0.5),
 ("float64 to float32 1M", lambda: x.to(T.float64).to(T.float32), lambda: xt.double().float()),
 ("int64 to float32 1M", lambda: i32.to(T.int64).to(T.float32), lambda: i32t.long().float()),
 ("tril 1024^2", lambda: m.tril(), lambda: mt.tril()),
 ("flip 1024^2", lambda: m.flip(0), lambda: mt.flip(0)),
 ("roll 1024^2", lambda: T.roll(m, 3, 1), lambda: torch.roll(mt, 3, 1)),
 ("repeat 512^2 x2", lambda: m[:512,:512].repeat(2,2), lambda: mt[:512,:512].repeat(2,2)),
 ("pad 1024^2", lambda: T.pad(m,(1,1,1,1)), lambda: torch.nn.functional.pad(mt,(1,1,1,1))),
 ("atan2 1M", lambda: T.atan2(x,x), lambda: torch.atan2(xt,xt)),
 ("remainder 1M", lambda: T.remainder(x,0.7), lambda: torch.remainder(xt,0.7)),
 ("floor 1M", lambda: x.floor(), lambda: xt.floor()),
 ("addcmul 1M", lambda: T.addcmul(x,x,x), lambda: torch.addcmul(xt,xt,xt)),
 ("lerp 1M", lambda: T.lerp(x,x,0.3), lambda: torch.lerp(xt,xt,0.3)),
 ("log_softmax dim=0", lambda: T.log_softmax(m,0), lambda: torch.log_softmax(mt,0)),
 ("avg_pool2d 3x3 s2 8x32x64^2", lambda: T.avg_pool2d(im,3,2,1), lambda: torch.nn.functional.avg_pool2d(imt,3,2,1)),
]
# Unary ops the sweep leaves out, on inputs inside their domains.
for name, a, at in [("acos", u, ut), ("asin", u, ut), ("atan", x, xt), ("cos", x, xt), ("cosh", x, xt),
                    ("sinh", x, xt), ("tan", x, xt), ("exp2", x, xt), ("expm1", x, xt), ("log10", pos, post),
                    ("log1p", pos, post), ("log2", pos, post), ("reciprocal", x, xt), ("rsqrt", pos, post), ("sign", x, xt),
                    ("square", x, xt), ("neg", x, xt), ("ceil", x, xt), ("round", x, xt), ("trunc", x, xt)]:
    cases.append((f"{name} 1M", getattr(a, name), getattr(at, name)))
cases += [
 ("softplus 1M", lambda: T.ops.softplus(x), lambda: F.softplus(xt)),
 ("sub 1M", lambda: x-pos, lambda: xt-post), ("div 1M", lambda: x/pos, lambda: xt/post),
 ("maximum 1M", lambda: T.maximum(x,pos), lambda: torch.maximum(xt,post)),
 ("clamp_min 1M", lambda: T.clamp_min(x,0.1), lambda: torch.clamp_min(xt,0.1)),
 ("addcdiv 1M", lambda: T.addcdiv(x,x,pos), lambda: torch.addcdiv(xt,xt,post)),
 ("int32 bitwise_and 1M", lambda: T.bitwise_and(i32,i32), lambda: torch.bitwise_and(i32t,i32t)),
 ("int32 shift 1M", lambda: T.bitwise_left_shift(i32,3), lambda: torch.bitwise_left_shift(i32t,3)),
 ("int32 mul 1M", lambda: i32*i32, lambda: i32t*i32t),
 ("int32 true div 1M", lambda: i32/7, lambda: i32t/7),
 ("int32 remainder 1M", lambda: T.remainder(i32,7), lambda: torch.remainder(i32t,7)),
 ("logical_and bool 1M", lambda: T.logical_and(bl,bl), lambda: torch.logical_and(blt,blt)),
 ("logical_not bool 1M", lambda: T.logical_not(bl), lambda: torch.logical_not(blt)),
 ("isnan 1M", lambda: T.isnan(x), lambda: torch.isnan(xt)),
 ("isfinite 1M", lambda: T.isfinite(x), lambda: torch.isfinite(xt)),
 ("all bool 1M", lambda: bl.all(), lambda: blt.all()),
 ("amin dim=1 1024^2", lambda: m.amin(1), lambda: mt.amin(1)),
 ("min 1M", lambda: x.min(), lambda: xt.min()),
 ("prod dim=1 1024^2", lambda: m.prod(1), lambda: mt.prod(1)),
 ("cumprod dim=1 1024^2", lambda: T.cumprod(m,1), lambda: torch.cumprod(mt,1)),
 ("std dim=0 1024^2", lambda: T.std(m,0), lambda: torch.std(mt,0)),
 ("addmm 512", lambda: T.addmm(m[0,:512],m[:512,:512],m[:512,:512]), lambda: torch.addmm(mt[0,:512],mt[:512,:512],mt[:512,:512])),
 ("dot 1M", lambda: T.dot(x,x), lambda: torch.dot(xt,xt)),
 ("outer 1024", lambda: T.outer(w,w), lambda: torch.outer(wt,wt)),
 ("one_hot 64K x10", lambda: T.one_hot(lab,10), lambda: F.one_hot(labt,10)),
 ("take 64K of 1M", lambda: T.take(x,idx), lambda: torch.take(xt,idxt)),
 ("stack 2x1024^2", lambda: T.stack([m,m]), lambda: torch.stack([mt,mt])),
 ("tile 512^2 x2", lambda: T.tile(m[:512,:512],(2,2)), lambda: torch.tile(mt[:512,:512],(2,2))),
 ("triu 1024^2", lambda: m.triu(), lambda: mt.triu()),
 ("permute 64x128x128 (2,0,1)", lambda: m.reshape(64,128,128).permute(2,0,1).contiguous(),
  lambda: mt.reshape(64,128,128).permute(2,0,1).contiguous()),
 ("randperm 1M", lambda: T.randperm(1<<20), lambda: torch.randperm(1<<20)),
 ("uniform_ 1M", lambda: x.clone().uniform_(), lambda: xt.clone().uniform_()),
 ("bernoulli_ 1M", lambda: x.clone().bernoulli_(0.3), lambda: xt.clone().bernoulli_(0.3)),
 ("arange int64 1M", lambda: T.arange(1<<20), lambda: torch.arange(1<<20)),
 ("fill_ 1M", lambda: x.clone().fill_(2.0), lambda: xt.clone().fill_(2.0)),
 ("index_add dim=0 512 rows", lambda: T.index_add(m,0,idx[:512]%1024,m[:512]),
  lambda: torch.index_add(mt,0,idxt[:512]%1024,mt[:512])),
 ("float16 exp 1M", lambda: h.exp(), lambda: ht.exp()),
 ("float16 sqrt 1M (abs)", lambda: T.abs(h).sqrt(), lambda: ht.abs().sqrt()),
 ("float16 sum 1M", lambda: h.sum(), lambda: ht.sum()),
 ("float16 amax 1M", lambda: h.amax(), lambda: ht.amax()),
 ("float16 sum dim=0 1024^2", lambda: h.reshape(1024,1024).sum(0), lambda: ht.reshape(1024,1024).sum(0)),
 ("float16 mul 1M", lambda: h*h, lambda: ht*ht),
 ("sum dims (0, 2) of 64x128x128", lambda: m.reshape(64,128,128).sum((0,2)), lambda: mt.reshape(64,128,128).sum((0,2))),
 ("masked_fill 1M", lambda: T.masked_fill(x,bl,0.0), lambda: xt.masked_fill(blt,0.0)),
 ("where bool 3 tensors 1M", lambda: T.where(bl,x,pos), lambda: torch.where(blt,xt,post)),
 ("mse_loss 1M", lambda: T.mse_loss(x,pos), lambda: F.mse_loss(xt,post)),
]
def tm(f, n):
    f(); t=time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter()-t)/n
for name,tf,pf in cases:
    try:
        t0=tm(tf,3); n=max(3,min(200,int(0.05/max(t0,1e-6))))
        rs=[]; pt=[]
        for r in range(5):
            a=tm(tf,n); b=tm(pf,n); rs.append(a/b); pt.append(b)
        print(f"{name:45s} {st.median(rs):5.2f}x  (torch {st.median(pt)*1e6:9.1f} us)", flush=True)
    except Exception as e:
        print(f"{name:45s} ERROR {type(e).__name__}: {str(e)[:100]}", flush=True)
